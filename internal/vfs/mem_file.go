package vfs

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
)

// memFile is an open MemFS file.
type memFile struct {
	m                *MemFS
	n                *node
	name             string
	gen              uint64 // the MemFS generation it was opened in
	read, write, app bool
	pos              int64 // guarded by m.mu
	closed           bool  // guarded by m.mu
}

var _ File = (*memFile)(nil)

// check reports why the handle cannot be used: closed, opened before a
// crash, or the file system is down. The caller holds m.mu.
func (f *memFile) check(op string) error {
	switch {
	case f.closed:
		return pathErr(op, f.name, fs.ErrClosed)
	case f.gen != f.m.gen || f.m.dead:
		return pathErr(op, f.name, syscall.EIO)
	}
	return nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) Read(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	n, err := f.readAtLocked(p, f.pos, "read")
	f.pos += int64(n)
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return f.readAtLocked(p, off, "read")
}

func (f *memFile) readAtLocked(p []byte, off int64, op string) (int, error) {
	if err := f.check(op); err != nil {
		return 0, err
	}
	switch {
	case !f.read:
		return 0, pathErr(op, f.name, syscall.EBADF)
	case f.n.dir:
		return 0, pathErr(op, f.name, syscall.EISDIR)
	case off < 0:
		return 0, pathErr(op, f.name, syscall.EINVAL)
	case off >= int64(len(f.n.data)):
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	off := f.pos
	if f.app {
		off = int64(len(f.n.data))
	}
	n, err := f.writeAtLocked(p, off)
	f.pos = off + int64(n)
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.app {
		return 0, pathErr("write", f.name, syscall.EINVAL)
	}
	return f.writeAtLocked(p, off)
}

func (f *memFile) writeAtLocked(p []byte, off int64) (int, error) {
	if err := f.check("write"); err != nil {
		return 0, err
	}
	if !f.write {
		return 0, pathErr("write", f.name, syscall.EBADF)
	}
	if off < 0 {
		return 0, pathErr("write", f.name, syscall.EINVAL)
	}
	if err := f.m.step(OpWrite, "write", f.name); err != nil {
		return 0, err
	}
	f.n.write(fileOp{off: off, data: p})
	return len(p), nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("seek"); err != nil {
		return 0, err
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = f.pos + offset
	case io.SeekEnd:
		abs = int64(len(f.n.data)) + offset
	default:
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	if abs < 0 {
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	f.pos = abs
	return abs, nil
}

func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("truncate"); err != nil {
		return err
	}
	if !f.write || size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	if err := f.m.step(OpTruncate, "truncate", f.name); err != nil {
		return err
	}
	f.n.write(fileOp{trunc: true, size: size})
	return nil
}

// Sync makes the file's contents durable; on a directory, its entries.
func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("sync"); err != nil {
		return err
	}
	if err := f.m.step(OpSync, "sync", f.name); err != nil {
		return err
	}
	if f.n.dir {
		f.n.syncDir()
		return nil
	}
	f.n.synced, f.n.pending = append([]byte(nil), f.n.data...), nil
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("stat"); err != nil {
		return nil, err
	}
	return f.n.info(baseName(f.name)), nil
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}

func baseName(path string) string {
	parts := split(path)
	if len(parts) == 0 {
		return "/"
	}
	return parts[len(parts)-1]
}
