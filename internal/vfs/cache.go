package vfs

import (
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// FileCache bounds the number of files its Handles hold open at once, node
// wide, whatever the number of partitions: past the limit, opening a file
// closes the least recently used one that is not in use, and a Handle
// whose file was closed opens it again on its next use.
//
// Durability survives the closing: a file with writes no fsync covered yet
// is fsynced before its descriptor is closed. An fsync through a later
// descriptor would write the same pages back (the page cache belongs to
// the file, not the descriptor), but a write-back error that happened while
// no descriptor was open can be lost: Linux reports it to a descriptor
// opened later only if nobody saw it and the inode stayed in memory, and
// after a failed write-back the pages count as clean, so the inode may be
// evicted with the error. Closing picks files without unsynced writes
// first, so that fsync is rare while the files written to fit the limit;
// past that, it closes a batch of written files at once, their fsyncs run
// together.
//
// The limit is soft in two ways: files in use (a read, write or fsync
// running through their Handle) are never closed, so while more than the
// limit are in use at once the count goes over; and the descriptors of
// concurrent opens and closes count from the moment they are decided.
type FileCache struct {
	limit int // <= 0: none

	mu    sync.Mutex // guards everything below and every Handle's state
	open  int        // Handles holding a descriptor or opening one
	dying int        // descriptors being closed to make room
	// clean and dirty hold the Handles with a descriptor that is not in
	// use, least recently used first; dirty those whose writes need an
	// fsync before the descriptor is closed.
	clean, dirty handleList
	stats        CacheStats
}

// CacheStats are a FileCache's counters.
type CacheStats struct {
	Limit int // the limit; <= 0: none
	Open  int // descriptors held now, including ones being closed
	// Reopens counts descriptors opened again after the cache closed them,
	// Evictions the descriptors it closed to make room, and EvictionSyncs
	// the evictions that fsynced the file first.
	Reopens, Evictions, EvictionSyncs uint64
}

// NewFileCache returns a cache that keeps at most limit files open
// (limit <= 0: no limit, files stay open until their Handle is closed).
func NewFileCache(limit int) *FileCache { return &FileCache{limit: limit} }

// Stats returns the cache's counters.
func (c *FileCache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Limit, s.Open = c.limit, c.open+c.dying
	return s
}

// HandleOptions describe how a Handle's file is used.
type HandleOptions struct {
	// Flag is what the file is opened with again after the cache closed
	// it (os.O_RDWR, os.O_WRONLY, ...); O_CREATE, O_EXCL, O_TRUNC and
	// O_APPEND are dropped.
	Flag int
	// Fsync makes the file's contents durable (nil: File.Sync), for Sync
	// and before an eviction closes a file with unsynced writes.
	Fsync func(File) error
	// Volatile files are never fsynced: an eviction closes them as they
	// are (a journal that only needs to outlive the process).
	Volatile bool
	// Dirty says the file has changes no fsync covered yet (it was just
	// created or truncated).
	Dirty bool
}

// Adopt makes an open file a Handle of the cache. The descriptor counts
// from now on; if that takes the cache past its limit, the least recently
// used file not in use is closed.
func (c *FileCache) Adopt(fsys FS, f File, o HandleOptions) *Handle {
	h := &Handle{c: c, fsys: fsys, name: f.Name(), fsync: o.Fsync, volatile: o.Volatile, f: f, dirty: o.Dirty,
		flag: o.Flag &^ (os.O_CREATE | os.O_EXCL | os.O_TRUNC | os.O_APPEND)}
	if h.fsync == nil {
		h.fsync = File.Sync
	}
	c.mu.Lock()
	c.open++
	victims := c.victimsLocked()
	c.idleLocked(h)
	c.mu.Unlock()
	c.evict(victims)
	return h
}

// Handle is a file of a FileCache. Its methods may be called concurrently,
// as those of a File; each holds the file open while it runs and opens it
// again first if the cache had closed it, returning that open's error.
type Handle struct {
	c        *FileCache
	fsys     FS
	name     string
	flag     int
	fsync    func(File) error
	volatile bool

	// Guarded by c.mu.
	f     File          // nil while closed by the cache
	pins  int           // methods running with f
	busy  chan struct{} // non-nil while f is being opened or closed; closed when done
	dirty bool          // written since the last fsync that covered every write
	gen   uint64        // counts finished writes, for Sync to tell whether it covered them
	err   error         // sticky: an eviction's fsync failed; Sync returns it
	gone  bool          // Close was called

	list       *handleList // clean or dirty while idle, else nil
	prev, next *Handle
}

// Name is the file's path.
func (h *Handle) Name() string { return h.name }

// ReadAt reads from the file, as File.ReadAt.
func (h *Handle) ReadAt(p []byte, off int64) (int, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release(false)
	return f.ReadAt(p, off)
}

// WriteAt writes to the file, as File.WriteAt.
func (h *Handle) WriteAt(p []byte, off int64) (int, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release(true)
	return f.WriteAt(p, off)
}

// Truncate changes the file's size, as File.Truncate.
func (h *Handle) Truncate(size int64) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release(true)
	return f.Truncate(size)
}

// DropCache asks the kernel to drop the file's clean cached pages of
// [off, off+n), so that new writes can reuse them (see seglog's
// Options.CacheKeepBytes); pages not yet written back stay.
func (h *Handle) DropCache(off, n int64) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release(false)
	return dropCache(f, off, n)
}

// Pin keeps the file open until Unpin, so that the calls in between cannot
// fail to open it; it returns the open's error. Pins nest.
func (h *Handle) Pin() error {
	_, err := h.acquire()
	return err
}

// Unpin ends a Pin.
func (h *Handle) Unpin() { h.release(false) }

// Sync makes every write made through the Handle before it was called
// durable, with HandleOptions.Fsync. A file the cache closed after
// fsyncing it is not opened again for nothing. Once an eviction's fsync
// failed, Sync returns that error for good: the kernel may have dropped
// the pages.
func (h *Handle) Sync() error {
	c := h.c
	c.mu.Lock()
	h.waitLocked()
	switch {
	case h.err != nil:
		c.mu.Unlock()
		return h.err
	case h.f == nil && !h.dirty && !h.gone:
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	f, err := h.acquire()
	if err != nil {
		return err
	}
	c.mu.Lock()
	gen := h.gen
	c.mu.Unlock()
	err = h.fsync(f)
	c.mu.Lock()
	if err == nil && h.gen == gen {
		h.dirty = false // a write that finished during the fsync keeps it
	}
	c.mu.Unlock()
	h.release(false)
	return err
}

// Close closes the file for good; a call running through the Handle keeps
// the descriptor until it returns. It does not fsync.
func (h *Handle) Close() error {
	c := h.c
	c.mu.Lock()
	h.waitLocked()
	if h.gone {
		c.mu.Unlock()
		return &fs.PathError{Op: "close", Path: h.name, Err: fs.ErrClosed}
	}
	h.gone = true
	f := h.f
	if f == nil || h.pins > 0 {
		c.mu.Unlock()
		return nil // the last release closes a pinned one
	}
	h.list.remove(h)
	h.f = nil
	c.open--
	c.mu.Unlock()
	return f.Close()
}

// waitLocked waits until no open or close of h's descriptor is running.
// The caller holds c.mu, which is released while waiting.
func (h *Handle) waitLocked() {
	for h.busy != nil {
		ch := h.busy
		h.c.mu.Unlock()
		<-ch
		h.c.mu.Lock()
	}
}

// acquire returns h's descriptor, opening it if the cache closed it, and
// pins it until release.
func (h *Handle) acquire() (File, error) {
	c := h.c
	c.mu.Lock()
	h.waitLocked()
	if h.gone {
		c.mu.Unlock()
		return nil, &fs.PathError{Op: "use", Path: h.name, Err: fs.ErrClosed}
	}
	if h.f != nil {
		h.list.remove(h)
		h.pins++
		f := h.f
		c.mu.Unlock()
		return f, nil
	}
	done := make(chan struct{})
	h.busy = done
	c.open++
	victims := c.victimsLocked()
	c.mu.Unlock()
	c.evict(victims)
	f, err := h.fsys.OpenFile(h.name, h.flag, 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	h.busy = nil
	close(done)
	if err != nil {
		c.open--
		return nil, fmt.Errorf("vfs: open again: %w", err)
	}
	c.stats.Reopens++
	h.f = f
	h.pins++
	return f, nil
}

// release ends a use of the descriptor; wrote says the use wrote to it.
func (h *Handle) release(wrote bool) {
	c := h.c
	c.mu.Lock()
	if wrote {
		h.dirty = true
		h.gen++
	}
	h.pins--
	if h.pins > 0 {
		c.mu.Unlock()
		return
	}
	if h.gone {
		f := h.f
		h.f = nil
		c.open--
		c.mu.Unlock()
		_ = f.Close() // Close already returned; nobody is left to tell
		return
	}
	c.idleLocked(h)
	victims := c.victimsLocked() // over the limit while everything was in use
	c.mu.Unlock()
	c.evict(victims)
}

// idleLocked files an open Handle that is not in use, as the most
// recently used. The caller holds c.mu.
func (c *FileCache) idleLocked(h *Handle) {
	if h.dirty && !h.volatile {
		c.dirty.pushBack(h)
	} else {
		c.clean.pushBack(h)
	}
}

// victim is a descriptor taken from its Handle to be closed.
type victim struct {
	h    *Handle
	f    File
	sync bool // fsync before closing
}

// dirtyBatch is the share of the limit closed at once when room must be
// made from files with unsynced writes: their fsyncs run together, which
// the file system commits as about one, and the room lasts for as many
// opens. One at a time cost an fsync per open while more files were
// written than fit (BenchmarkAppendManyLogs).
const dirtyBatch = 16

// victimsLocked takes descriptors from idle Handles until the cache is
// within its limit or none is idle: clean ones first, then, if need be,
// a batch of limit/dirtyBatch dirty ones. The caller holds c.mu and then
// calls evict, without it.
func (c *FileCache) victimsLocked() []victim {
	if c.limit <= 0 || c.open <= c.limit {
		return nil
	}
	var vs []victim
	take := func(l *handleList) {
		h := l.front()
		l.remove(h)
		vs = append(vs, victim{h: h, f: h.f, sync: h.dirty && !h.volatile})
		h.f, h.busy = nil, make(chan struct{})
		c.open--
		c.dying++
	}
	for c.open > c.limit && c.clean.front() != nil {
		take(&c.clean)
	}
	for n := max(c.open-c.limit, c.limit/dirtyBatch); n > 0 && c.dirty.front() != nil; n-- {
		take(&c.dirty)
	}
	return vs // short while every descriptor is in use: over the limit for now
}

// evict closes the victims' descriptors, fsyncing first, all at once,
// those with unsynced writes. A failed fsync is kept for the Handle's
// next Sync.
func (c *FileCache) evict(vs []victim) {
	errs := make([]error, len(vs))
	var wg sync.WaitGroup
	for i, v := range vs {
		if v.sync {
			wg.Go(func() { errs[i] = v.h.fsync(v.f) })
		}
	}
	wg.Wait()
	for i, v := range vs {
		// A close error says nothing an fsync did not: the data of a
		// synced file is on disk, that of a volatile one need not be.
		_ = v.f.Close()
		c.mu.Lock()
		c.dying--
		c.stats.Evictions++
		if v.sync {
			c.stats.EvictionSyncs++
			if errs[i] != nil && v.h.err == nil {
				v.h.err = fmt.Errorf("vfs: fsync %s before closing it: %w", v.h.name, errs[i])
			} else if errs[i] == nil {
				v.h.dirty = false // no write can run while busy is set
			}
		}
		close(v.h.busy)
		v.h.busy = nil
		c.mu.Unlock()
	}
}

// handleList is a doubly linked list of Handles through their prev and
// next fields, guarded by FileCache.mu.
type handleList struct {
	head, tail *Handle
}

func (l *handleList) front() *Handle { return l.head }

func (l *handleList) pushBack(h *Handle) {
	h.list, h.prev, h.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.next = h
	} else {
		l.head = h
	}
	l.tail = h
}

// remove takes h out of l; l may be nil (h is in no list).
func (l *handleList) remove(h *Handle) {
	if l == nil {
		return
	}
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		l.head = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	} else {
		l.tail = h.prev
	}
	h.list, h.prev, h.next = nil, nil, nil
}
