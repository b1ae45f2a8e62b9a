package vfs

import (
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// Op is a set of kinds of operation: those a FaultyFS fails, and the kind
// a MemFS crash point (CloneAt) sees, where OpCreate also covers an open
// with O_TRUNC.
type Op uint32

const (
	OpWrite    Op = 1 << iota // File.Write, File.WriteAt
	OpSync                    // File.Sync, FS.SyncDir
	OpCreate                  // FS.OpenFile with O_CREATE, FS.MkdirAll
	OpTruncate                // File.Truncate
	OpRemove                  // FS.Remove
	OpRename                  // FS.Rename
	OpRead                    // File.Read, File.ReadAt, FS.ReadDir

	// OpFull is what a full disk fails: everything that may need space.
	OpFull = OpWrite | OpSync | OpCreate
)

// FaultyFS wraps an FS and fails chosen kinds of operation, on demand,
// with an errno wrapped in *fs.PathError as the OS does. A failing write
// first writes half its bytes, as a write that runs out of space midway
// does. Files opened before a Fail are affected too.
type FaultyFS struct {
	fs FS

	mu       sync.Mutex // guards ops, errno and failures
	ops      Op
	errno    syscall.Errno
	failures int64
}

// Faulty wraps fsys (nil: OS); it fails nothing until Fail.
func Faulty(fsys FS) *FaultyFS { return &FaultyFS{fs: Or(fsys)} }

var _ FS = (*FaultyFS)(nil)

// Fail makes the operations in ops fail with errno (syscall.ENOSPC,
// syscall.EIO, ...) until Heal.
func (f *FaultyFS) Fail(ops Op, errno syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops, f.errno = ops, errno
}

// Heal stops injecting failures.
func (f *FaultyFS) Heal() { f.Fail(0, 0) }

// Failures is the number of operations failed so far.
func (f *FaultyFS) Failures() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures
}

// fault returns the injected error for an operation of kind k on path, or
// nil.
func (f *FaultyFS) fault(k Op, op, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ops&k == 0 {
		return nil
	}
	f.failures++
	return &fs.PathError{Op: op, Path: path, Err: f.errno}
}

func (f *FaultyFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 {
		if err := f.fault(OpCreate, "open", name); err != nil {
			return nil, err
		}
	}
	fh, err := f.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: fh, f: f}, nil
}

func (f *FaultyFS) Remove(name string) error {
	if err := f.fault(OpRemove, "remove", name); err != nil {
		return err
	}
	return f.fs.Remove(name)
}

func (f *FaultyFS) Rename(oldpath, newpath string) error {
	if err := f.fault(OpRename, "rename", oldpath); err != nil {
		return err
	}
	return f.fs.Rename(oldpath, newpath)
}

func (f *FaultyFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.fault(OpRead, "readdirent", name); err != nil {
		return nil, err
	}
	return f.fs.ReadDir(name)
}

func (f *FaultyFS) MkdirAll(path string, perm fs.FileMode) error {
	if err := f.fault(OpCreate, "mkdir", path); err != nil {
		return err
	}
	return f.fs.MkdirAll(path, perm)
}

func (f *FaultyFS) Stat(name string) (fs.FileInfo, error) { return f.fs.Stat(name) }

func (f *FaultyFS) SyncDir(dir string) error {
	if err := f.fault(OpSync, "sync", dir); err != nil {
		return err
	}
	return f.fs.SyncDir(dir)
}

type faultyFile struct {
	File
	f *FaultyFS
}

func (h *faultyFile) Read(p []byte) (int, error) {
	if err := h.f.fault(OpRead, "read", h.Name()); err != nil {
		return 0, err
	}
	return h.File.Read(p)
}

func (h *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if err := h.f.fault(OpRead, "read", h.Name()); err != nil {
		return 0, err
	}
	return h.File.ReadAt(p, off)
}

func (h *faultyFile) Write(p []byte) (int, error) {
	if err := h.f.fault(OpWrite, "write", h.Name()); err != nil {
		n, _ := h.File.Write(p[:len(p)/2])
		return n, err
	}
	return h.File.Write(p)
}

func (h *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if err := h.f.fault(OpWrite, "write", h.Name()); err != nil {
		n, _ := h.File.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return h.File.WriteAt(p, off)
}

func (h *faultyFile) Truncate(size int64) error {
	if err := h.f.fault(OpTruncate, "truncate", h.Name()); err != nil {
		return err
	}
	return h.File.Truncate(size)
}

func (h *faultyFile) Sync() error {
	if err := h.f.fault(OpSync, "sync", h.Name()); err != nil {
		return err
	}
	return h.File.Sync()
}
