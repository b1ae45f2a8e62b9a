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
	rng     *rand.Rand            // nil: a crash keeps no unsynced change
	gen     uint64                // bumped by Crash: older handles fail
	dead    bool                  // crashed and not restarted: every call fails
	ops     int64                 // mutating operations so far
	crashAt int64                 // > 0: crash at this operation
	onCrash func()                // run by a crash, holding mu
	cloneAt func(Op, string) bool // CloneAt's trigger, nil once fired
	onClone func(*MemFS)          // CloneAt's receiver of the image
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
	m.root = m.survivor(m.root, map[*node]*node{})
}

// CrashClone returns a new MemFS holding what a crash now would leave (as
// Crash does), and leaves m as it is: a test goes on with m, or stops
// whatever runs on it, and starts anew on the clone. The clone's crashes
// keep a random prefix of unsynced changes if m's do, with a seed drawn
// from m's.
func (m *MemFS) CrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cloneLocked()
}

func (m *MemFS) cloneLocked() *MemFS {
	c := &MemFS{root: m.survivor(m.root, map[*node]*node{})}
	if m.rng != nil {
		c.rng = rand.New(rand.NewPCG(m.rng.Uint64(), m.rng.Uint64()))
	}
	return c
}

// CloneAt arms a crash image: at the first mutating operation for which
// at(kind, path) is true, just before it takes effect, fn gets what a crash
// at that moment would leave (CrashClone), and m goes on. It fires once; at
// nil disarms. fn runs holding m's lock and must not call m; at runs for
// every mutating operation until then, holding it too.
func (m *MemFS) CloneAt(at func(k Op, path string) bool, fn func(*MemFS)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cloneAt, m.onClone = at, fn
}

// survivor returns a copy of n (and, for a directory, of its children)
// holding what survives a crash, all of it durable. Copies are shared
// where n's nodes are (seen): a file renamed across directories and not
// yet synced in either.
func (m *MemFS) survivor(n *node, seen map[*node]*node) *node {
	if c, ok := seen[n]; ok {
		return c
	}
	c := &node{dir: n.dir, mtime: n.mtime}
	seen[n] = c
	if !n.dir {
		data := slices.Clone(n.synced)
		keep, tear := m.pick(len(n.pending))
		for i, op := range n.pending[:keep] {
			if i == keep-1 && tear && !op.trunc && len(op.data) > 1 {
				op.data = op.data[:1+m.rng.IntN(len(op.data)-1)]
			}
			data = op.apply(data)
		}
		c.data, c.synced = data, slices.Clone(data)
		return c
	}
	entries := cloneEntries(n.durable)
	keep, _ := m.pick(len(n.dpending))
	for _, group := range n.dpending[:keep] {
		for _, ch := range group {
			if ch.n == nil {
				delete(entries, ch.name)
			} else {
				entries[ch.name] = ch.n
			}
		}
	}
	c.entries = make(map[string]*node, len(entries))
	for _, name := range sortedNames(entries) {
		c.entries[name] = m.survivor(entries[name], seen)
	}
	c.durable = cloneEntries(c.entries)
	return c
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

// step counts one mutating operation, of kind k, and reports an error if
// the file system is dead, or dies at this operation; an armed CloneAt
// may fire first. The caller holds mu.
func (m *MemFS) step(k Op, op, path string) error {
	if m.dead {
		return pathErr(op, path, syscall.EIO)
	}
	m.ops++
	if m.cloneAt != nil && m.cloneAt(k, path) {
		fn := m.onClone
		m.cloneAt, m.onClone = nil, nil
		fn(m.cloneLocked())
	}
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
