package vfs

import (
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory file system that keeps, beside what its files and
// directories hold now, what would survive a power loss: a file's contents
// as of its last File.Sync, a directory's entries as of its last SyncDir
// (modelled on Pebble's strict MemFS). Crash simulates the power loss.
//
// With a seed (NewStrictMemSeeded) a crash keeps, per file and per
// directory, a random prefix of the changes made since the last sync, the
// last kept write possibly torn to a random length: the disk may have
// written back some of the page cache before power went. Without one it
// keeps none of them.
//
// All methods are safe for concurrent use.
type MemFS struct {
	mu      sync.Mutex // guards everything below and every node
	root    *node
	rng     *rand.Rand // nil: a crash keeps no unsynced change
	gen     uint64     // bumped by Crash: older handles fail
	dead    bool       // crashed and not restarted: every call fails
	ops     int64      // mutating operations so far
	crashAt int64      // > 0: crash at this operation
	onCrash func()     // run by a crash, holding mu
}

// node is a file or a directory.
type node struct {
	dir bool
	// A file: contents now, as of the last Sync, and the changes since.
	data    []byte
	synced  []byte
	pending []fileOp
	// A directory: entries now, as of the last SyncDir, and the changes
	// since.
	entries  map[string]*node
	durable  map[string]*node
	dpending [][]entryChange
	mtime    time.Time
}

// fileOp is a write at off, or (trunc) a truncation to size.
type fileOp struct {
	trunc bool
	off   int64
	data  []byte
	size  int64
}

// entryChange binds name to n, or removes name when n is nil. A rename is
// one atomic group of two changes.
type entryChange struct {
	name string
	n    *node
}

func newDir() *node {
	return &node{dir: true, entries: map[string]*node{}, durable: map[string]*node{}}
}

// NewStrictMem returns an empty MemFS whose crashes keep nothing that was
// not synced.
func NewStrictMem() *MemFS { return &MemFS{root: newDir()} }

// NewStrictMemSeeded returns an empty MemFS whose crashes keep a random
// prefix of the unsynced changes, chosen by seed.
func NewStrictMemSeeded(seed uint64) *MemFS {
	return &MemFS{root: newDir(), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

var _ FS = (*MemFS)(nil)

// Crash simulates a power loss: the file system holds only what was
// durable (see MemFS), every open File fails from now on, and so does
// every call until Restart.
func (m *MemFS) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashLocked()
}

// CrashAt arms a crash at the nth mutating operation from the start (n as
// counted by Ops): that operation fails without effect, as do all calls
// after it until Restart. n <= 0 disarms.
func (m *MemFS) CrashAt(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashAt = n
}

// OnCrash sets a function that each crash runs (fn must not call the
// MemFS): a test stops what would otherwise retry forever.
func (m *MemFS) OnCrash(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onCrash = fn
}

// Ops is the number of mutating operations (writes, truncations, syncs,
// creations, removals, renames) made so far.
func (m *MemFS) Ops() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// Crashed reports whether the file system has crashed and not restarted.
func (m *MemFS) Crashed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dead
}

// Restart ends a crash: the file system serves calls again, from its
// durable state. Files opened before the crash keep failing.
func (m *MemFS) Restart() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dead = false
	m.crashAt = 0
}

func (m *MemFS) crashLocked() {
	if m.dead {
		return
	}
	m.dead = true
	m.gen++
	if m.onCrash != nil {
		m.onCrash()
	}
	seen := map[*node]bool{}
	m.settle(m.root, seen)
}

// settle replaces n's state (and, for a directory, its children's) with
// what survives the crash, which then counts as durable.
func (m *MemFS) settle(n *node, seen map[*node]bool) {
	if seen[n] {
		return
	}
	seen[n] = true
	if !n.dir {
		data := slices.Clone(n.synced)
		keep, tear := m.pick(len(n.pending))
		for i, op := range n.pending[:keep] {
			if i == keep-1 && tear && !op.trunc && len(op.data) > 1 {
				op.data = op.data[:1+m.rng.IntN(len(op.data)-1)]
			}
			data = op.apply(data)
		}
		n.data, n.synced, n.pending = data, slices.Clone(data), nil
		return
	}
	entries := cloneEntries(n.durable)
	keep, _ := m.pick(len(n.dpending))
	for _, group := range n.dpending[:keep] {
		for _, c := range group {
			if c.n == nil {
				delete(entries, c.name)
			} else {
				entries[c.name] = c.n
			}
		}
	}
	n.entries, n.durable, n.dpending = entries, cloneEntries(entries), nil
	for _, name := range sortedNames(entries) {
		m.settle(entries[name], seen)
	}
}

// pick chooses how many of n unsynced changes survive a crash, and whether
// the last of them is torn.
func (m *MemFS) pick(n int) (keep int, tear bool) {
	if m.rng == nil || n == 0 {
		return 0, false
	}
	return m.rng.IntN(n + 1), m.rng.IntN(2) == 0
}

func (op fileOp) apply(data []byte) []byte {
	if op.trunc {
		return resize(data, op.size)
	}
	end := op.off + int64(len(op.data))
	if end > int64(len(data)) {
		data = resize(data, end)
	}
	copy(data[op.off:], op.data)
	return data
}

func resize(b []byte, size int64) []byte {
	if size <= int64(len(b)) {
		return b[:size]
	}
	return append(b, make([]byte, size-int64(len(b)))...)
}

func cloneEntries(e map[string]*node) map[string]*node {
	c := make(map[string]*node, len(e))
	for k, v := range e {
		c[k] = v
	}
	return c
}

func sortedNames(e map[string]*node) []string {
	names := make([]string, 0, len(e))
	for k := range e {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// step counts one mutating operation and reports an error if the file
// system is dead, or dies at this operation. The caller holds mu.
func (m *MemFS) step(op, path string) error {
	if m.dead {
		return pathErr(op, path, syscall.EIO)
	}
	m.ops++
	if m.crashAt > 0 && m.ops >= m.crashAt {
		m.crashLocked()
		return pathErr(op, path, syscall.EIO)
	}
	return nil
}

func (m *MemFS) alive(op, path string) error {
	if m.dead {
		return pathErr(op, path, syscall.EIO)
	}
	return nil
}

func pathErr(op, path string, err error) error { return &fs.PathError{Op: op, Path: path, Err: err} }

// split turns a path into its components below the root.
func split(path string) []string {
	path = filepath.ToSlash(filepath.Clean(path))
	var parts []string
	for _, p := range strings.Split(path, "/") {
		if p != "" && p != "." {
			parts = append(parts, p)
		}
	}
	return parts
}

// lookup finds the directory holding path's last component, and the node
// named by it (nil if absent).
func (m *MemFS) lookup(op, path string) (parent *node, name string, n *node, err error) {
	parts := split(path)
	if len(parts) == 0 {
		return nil, "", m.root, nil
	}
	dir := m.root
	for _, p := range parts[:len(parts)-1] {
		next, ok := dir.entries[p]
		switch {
		case !ok:
			return nil, "", nil, pathErr(op, path, fs.ErrNotExist)
		case !next.dir:
			return nil, "", nil, pathErr(op, path, syscall.ENOTDIR)
		}
		dir = next
	}
	name = parts[len(parts)-1]
	return dir, name, dir.entries[name], nil
}

// change applies one atomic group of entry changes to dir.
func (dir *node) change(cs ...entryChange) {
	for _, c := range cs {
		if c.n == nil {
			delete(dir.entries, c.name)
		} else {
			dir.entries[c.name] = c.n
		}
	}
	dir.dpending = append(dir.dpending, cs)
	dir.mtime = time.Now()
}
