// Package vfs is the file-system layer of the storage code: the partition
// log and the FSM's checkpoint and journal do every file operation through
// an FS, so that tests can run them on a file system that loses unsynced
// writes at a simulated power loss (NewStrictMem) or fails on demand
// (NewFaulty).
//
// Durability follows POSIX as ext4 and XFS implement it: a file's contents
// are durable once File.Sync returns; the creation, removal or renaming of
// a directory entry is durable once SyncDir of that directory returns. A
// caller that needs a new file to survive a crash syncs the file and then
// its directory.
package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// DirMode and FileMode are the permissions of the directories and files
// the storage code creates: its user's alone, since a node's data holds
// its clients' records and the metadata's SCRAM keys.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// File is an open file. Reads and writes at an offset (ReadAt, WriteAt)
// may run concurrently with each other; Read, Write and Seek share the
// file's position.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.Closer
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Sync makes the file's contents durable.
	Sync() error
	Stat() (fs.FileInfo, error)
	// Name is the path the file was opened with.
	Name() string
}

// FS is a file system. Paths are OS paths (filepath).
type FS interface {
	// OpenFile opens a file with os.OpenFile's flags (O_RDONLY, O_WRONLY,
	// O_RDWR, O_CREATE, O_EXCL, O_TRUNC, O_APPEND).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Remove(name string) error
	// Rename replaces newpath atomically.
	Rename(oldpath, newpath string) error
	// ReadDir lists a directory sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	MkdirAll(path string, perm fs.FileMode) error
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes the creations, removals and renames of entries of dir
	// durable.
	SyncDir(dir string) error
}

// OS is the real file system.
var OS FS = osFS{}

// Or returns fsys, or OS when fsys is nil.
func Or(fsys FS) FS {
	if fsys == nil {
		return OS
	}
	return fsys
}

// Open opens a file for reading.
func Open(fsys FS, name string) (File, error) {
	return fsys.OpenFile(name, os.O_RDONLY, 0)
}

// Create creates or truncates a file for reading and writing.
func Create(fsys FS, name string) (File, error) {
	return fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, FileMode)
}

// ReadFile reads a whole file, like os.ReadFile.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := Open(fsys, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFile writes a whole file, like os.WriteFile (no sync).
func WriteFile(fsys FS, name string, data []byte, perm fs.FileMode) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// MkdirAllSync creates path and any missing parents, like MkdirAll, and
// makes each created directory's entry durable by syncing its parent.
func MkdirAllSync(fsys FS, path string, perm fs.FileMode) error {
	path = filepath.Clean(path)
	var missing []string
	for p := path; ; p = filepath.Dir(p) {
		if _, err := fsys.Stat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(path, perm); err != nil {
		return err
	}
	// Parents first: a child's entry is durable only in a durable parent.
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil File
	}
	return f, nil
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

var _ File = (*os.File)(nil)
