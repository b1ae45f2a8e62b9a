package vfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// OpenFile implements FS. A directory opens read-only; its Sync is SyncDir.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mutates := flag&(os.O_CREATE|os.O_TRUNC) != 0
	if mutates {
		if err := m.step(OpCreate, "open", name); err != nil {
			return nil, err
		}
	} else if err := m.alive("open", name); err != nil {
		return nil, err
	}
	parent, base, n, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	case n != nil && n.dir && acc != os.O_RDONLY:
		return nil, pathErr("open", name, syscall.EISDIR)
	case n == nil:
		if parent == nil {
			return nil, pathErr("open", name, syscall.EISDIR)
		}
		n = &node{mtime: time.Now()}
		parent.change(entryChange{base, n})
	case flag&os.O_TRUNC != 0 && !n.dir && acc != os.O_RDONLY:
		n.write(fileOp{trunc: true, size: 0})
	}
	return &memFile{
		m: m, n: n, name: name, gen: m.gen,
		read:  acc == os.O_RDONLY || acc == os.O_RDWR,
		write: acc == os.O_WRONLY || acc == os.O_RDWR,
		app:   flag&os.O_APPEND != 0,
	}, nil
}

// write applies op to a file's contents and remembers it until the next
// Sync.
func (n *node) write(op fileOp) {
	n.data = op.apply(n.data)
	if !op.trunc {
		op.data = append([]byte(nil), op.data...)
	}
	n.pending = append(n.pending, op)
	n.mtime = time.Now()
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(OpRemove, "remove", name); err != nil {
		return err
	}
	parent, base, n, err := m.lookup("remove", name)
	switch {
	case err != nil:
		return err
	case n == nil:
		return pathErr("remove", name, fs.ErrNotExist)
	case parent == nil:
		return pathErr("remove", name, syscall.EBUSY)
	case n.dir && len(n.entries) > 0:
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	parent.change(entryChange{base, nil})
	return nil
}

// Rename implements FS. Within one directory it is one atomic change;
// across directories the new entry is made before the old one goes.
func (m *MemFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(OpRename, "rename", oldpath); err != nil {
		return err
	}
	op, ob, n, err := m.lookup("rename", oldpath)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	if n == nil || op == nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	np, nb, existing, err := m.lookup("rename", newpath)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	if np == nil || (existing != nil && existing.dir) {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EISDIR}
	}
	if op == np {
		if ob != nb {
			op.change(entryChange{nb, n}, entryChange{ob, nil})
		}
		return nil
	}
	np.change(entryChange{nb, n})
	op.change(entryChange{ob, nil})
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.alive("readdir", name); err != nil {
		return nil, err
	}
	_, _, n, err := m.lookup("readdir", name)
	switch {
	case err != nil:
		return nil, err
	case n == nil:
		return nil, pathErr("readdir", name, fs.ErrNotExist)
	case !n.dir:
		return nil, pathErr("readdir", name, syscall.ENOTDIR)
	}
	var out []fs.DirEntry
	for _, e := range sortedNames(n.entries) {
		out = append(out, fs.FileInfoToDirEntry(n.entries[e].info(e)))
	}
	return out, nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(path string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.alive("mkdir", path); err != nil {
		return err
	}
	dir := m.root
	for _, p := range split(path) {
		next, ok := dir.entries[p]
		if !ok {
			if err := m.step(OpCreate, "mkdir", path); err != nil {
				return err
			}
			next = newDir()
			next.mtime = time.Now()
			dir.change(entryChange{p, next})
		} else if !next.dir {
			return pathErr("mkdir", path, syscall.ENOTDIR)
		}
		dir = next
	}
	return nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.alive("stat", name); err != nil {
		return nil, err
	}
	_, _, n, err := m.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, pathErr("stat", name, fs.ErrNotExist)
	}
	return n.info(filepath.Base(name)), nil
}

// SyncDir implements FS.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(OpSync, "sync", dir); err != nil {
		return err
	}
	_, _, n, err := m.lookup("sync", dir)
	switch {
	case err != nil:
		return err
	case n == nil:
		return pathErr("sync", dir, fs.ErrNotExist)
	case !n.dir:
		return pathErr("sync", dir, syscall.ENOTDIR)
	}
	n.syncDir()
	return nil
}

func (n *node) syncDir() {
	n.durable, n.dpending = cloneEntries(n.entries), nil
}

func (n *node) info(name string) fs.FileInfo {
	fi := memInfo{name: name, size: int64(len(n.data)), mode: 0o644, mtime: n.mtime}
	if n.dir {
		fi.size, fi.mode = 0, fs.ModeDir|0o755
	}
	return fi
}

type memInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func (fi memInfo) Name() string       { return fi.name }
func (fi memInfo) Size() int64        { return fi.size }
func (fi memInfo) Mode() fs.FileMode  { return fi.mode }
func (fi memInfo) ModTime() time.Time { return fi.mtime }
func (fi memInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi memInfo) Sys() any           { return nil }
