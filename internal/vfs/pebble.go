package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	pebblevfs "github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble returns fsys as a Pebble file system, so that a Pebble DB (the
// node-wide Raft log store) can live on the same FS as the partition logs
// and checkpoints: one MemFS then holds a whole node's storage, and one
// crash loses exactly what was not synced across all of it. Production
// gives Pebble its own OS file system instead.
//
// Pebble's Sync, SyncData and SyncTo all sync the whole file; Link and
// disk usage are unsupported (the log store uses neither). Lock excludes
// other DBs opened through the same adapter, as Pebble's MemFS does
// within a process.
func Pebble(fsys FS) pebblevfs.FS {
	return &pebbleFS{fs: Or(fsys), locks: map[string]bool{}}
}

type pebbleFS struct {
	fs FS

	mu    sync.Mutex      // guards locks
	locks map[string]bool // the paths locked now
}

var _ pebblevfs.FS = (*pebbleFS)(nil)

// Create makes a new file at name, replacing any there: Pebble expects a
// new inode, which other open handles of the old file do not see.
func (p *pebbleFS) Create(name string, _ pebblevfs.DiskWriteCategory) (pebblevfs.File, error) {
	if err := p.fs.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return p.open(name, os.O_RDWR|os.O_CREATE|os.O_EXCL)
}

func (p *pebbleFS) open(name string, flag int) (pebblevfs.File, error) {
	f, err := p.fs.OpenFile(name, flag, FileMode)
	if err != nil {
		return nil, err
	}
	return pebbleFile{f}, nil
}

func (p *pebbleFS) Link(oldname, newname string) error {
	return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: pebblevfs.ErrUnsupported}
}

func (p *pebbleFS) Open(name string, opts ...pebblevfs.OpenOption) (pebblevfs.File, error) {
	f, err := p.open(name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o.Apply(f)
	}
	return f, nil
}

func (p *pebbleFS) OpenReadWrite(name string, _ pebblevfs.DiskWriteCategory, opts ...pebblevfs.OpenOption) (pebblevfs.File, error) {
	f, err := p.open(name, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o.Apply(f)
	}
	return f, nil
}

// OpenDir opens a directory, whose Sync is FS.SyncDir.
func (p *pebbleFS) OpenDir(name string) (pebblevfs.File, error) {
	return p.open(name, os.O_RDONLY)
}

func (p *pebbleFS) Remove(name string) error { return p.fs.Remove(name) }

func (p *pebbleFS) RemoveAll(name string) error {
	entries, err := p.fs.ReadDir(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		return p.fs.Remove(name)
	case err != nil:
		return err
	}
	var first error
	for _, e := range entries {
		if err := p.RemoveAll(filepath.Join(name, e.Name())); err != nil && first == nil {
			first = err
		}
	}
	if err := p.fs.Remove(name); err != nil && first == nil {
		first = err
	}
	return first
}

func (p *pebbleFS) Rename(oldname, newname string) error { return p.fs.Rename(oldname, newname) }

// ReuseForWrite renames oldname to newname and opens it for writing
// without truncating it, as Pebble does on the OS.
func (p *pebbleFS) ReuseForWrite(oldname, newname string, _ pebblevfs.DiskWriteCategory) (pebblevfs.File, error) {
	if err := p.fs.Rename(oldname, newname); err != nil {
		return nil, err
	}
	return p.open(newname, os.O_RDWR|os.O_CREATE)
}

func (p *pebbleFS) MkdirAll(dir string, perm os.FileMode) error { return p.fs.MkdirAll(dir, perm) }

// Lock creates name, as on the OS, and holds it until the closer closes.
func (p *pebbleFS) Lock(name string) (io.Closer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.locks[name] {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: syscall.EAGAIN}
	}
	f, err := p.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, FileMode)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	p.locks[name] = true
	return pebbleLock{p: p, name: name}, nil
}

type pebbleLock struct {
	p    *pebbleFS
	name string
}

func (l pebbleLock) Close() error {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	delete(l.p.locks, l.name)
	return nil
}

func (p *pebbleFS) List(dir string) ([]string, error) {
	entries, err := p.fs.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (p *pebbleFS) Stat(name string) (pebblevfs.FileInfo, error) {
	fi, err := p.fs.Stat(name)
	if err != nil {
		return nil, err
	}
	return pebbleInfo{fi}, nil
}

func (*pebbleFS) PathBase(path string) string    { return filepath.Base(path) }
func (*pebbleFS) PathJoin(elem ...string) string { return filepath.Join(elem...) }
func (*pebbleFS) PathDir(path string) string     { return filepath.Dir(path) }
func (*pebbleFS) Unwrap() pebblevfs.FS           { return nil }
func (*pebbleFS) GetDiskUsage(string) (pebblevfs.DiskUsage, error) {
	return pebblevfs.DiskUsage{}, pebblevfs.ErrUnsupported
}

// pebbleFile is a File as Pebble sees it.
type pebbleFile struct{ File }

var _ pebblevfs.File = pebbleFile{}

func (pebbleFile) Preallocate(offset, length int64) error { return nil }
func (pebbleFile) Prefetch(offset, length int64) error    { return nil }
func (pebbleFile) Fd() uintptr                            { return pebblevfs.InvalidFd }
func (f pebbleFile) SyncData() error                      { return f.Sync() }

// SyncTo syncs the whole file, which Pebble allows.
func (f pebbleFile) SyncTo(int64) (fullSync bool, err error) { return true, f.Sync() }

func (f pebbleFile) Stat() (pebblevfs.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return pebbleInfo{fi}, nil
}

// pebbleInfo is a FileInfo with the device Pebble asks for: one device,
// the zero DeviceID, for every file.
type pebbleInfo struct{ fs.FileInfo }

func (pebbleInfo) DeviceID() pebblevfs.DeviceID { return pebblevfs.DeviceID{} }
