package multiraft

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// pebbleLog is the node-wide Pebble DB that holds the Raft log and stable
// state of every LogStorePebble group on a Host, each under its own key
// prefix (pebbleView). Every write commits through Pebble's one WAL, so
// the fdatasync of one commit covers the concurrent commits of all groups
// (group commit).
//
// It closes once the Host has released it (Host.Close) and the last view
// is closed: a Host closed before its groups (a simulated crash) leaves
// their raft running on the DB until they close.
type pebbleLog struct {
	db         *pebble.DB
	id         string // random, kept in the DB: a group dir's marker names it
	log        *slog.Logger
	watch      *stallWatch   // its write stalls
	health     *health       // failed or full (pebblefail.go)
	budget     *logBudget    // the bound on its groups' entries (logbudget.go)
	budgetDone chan struct{} // closed as the budget's loop ends

	mu       sync.Mutex             // guards views, released and closed
	views    map[string]*pebbleView // the open groups, by name
	released bool                   // the Host is done with the DB
	closed   bool

	// Write caching: a view whose StoreLogs commit without fsync notes it
	// here, and the flusher fsyncs the WAL by the earliest deadline.
	fmu      sync.Mutex // guards dirty, deadline, marks and synced
	dirty    bool       // a NoSync write is not covered by a sync yet
	deadline time.Time  // when the flusher syncs at the latest, if dirty
	marks    uint64     // NoSync writes noted so far
	synced   uint64     // marks covered by the flusher's last sync
	kick     chan struct{}
	stop     chan struct{} // closed at close: ends the flusher
	done     chan struct{} // closed by the flusher as it ends
	syncs    atomic.Uint64 // the flusher's syncs
}

// The DB's own keys start with 'm'; groups' keys with 'l' (log) and 's'
// (stable state), see pebbleView.
var pebbleIDKey = []byte("m/id")

// pebbleConfig is how a pebbleLog opens.
type pebbleConfig struct {
	fs       vfs.FS // nil: the OS's
	memTable int64  // 0: DefaultLogMemTable
	logger   *slog.Logger
}

// openPebbleLog opens (creating if needed) the DB in dir.
func openPebbleLog(dir string, c pebbleConfig) (*pebbleLog, error) {
	logger := c.logger
	cache := pebble.NewCache(pebbleCacheSize)
	defer cache.Unref() // the DB holds its own reference
	watch := &stallWatch{log: logger.With("logger", "pebble")}
	h := newHealth(logger.With("logger", "pebble"))
	opts := pebbleOptions(c, cache, h)
	opts.EventListener = watch.listener()
	var db *pebble.DB
	var id string
	err := guarded(h, func() error {
		var err error
		if db, err = pebble.Open(dir, opts); err != nil {
			return fmt.Errorf("multiraft: open raft log store %s: %w", dir, err)
		}
		if id, err = pebbleID(db); err != nil {
			_ = db.Close()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	pl := &pebbleLog{db: db, id: id, log: logger, watch: watch, health: h, views: map[string]*pebbleView{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		budget: newLogBudget(int64(opts.MemTableSize)), budgetDone: make(chan struct{})}
	go pl.flusher()
	go pl.budget.loop(pl.stop, pl.budgetDone)
	return pl, nil
}

const (
	// pebbleCacheSize is the block cache: raft serves its recent entries
	// from its own LogCache, and a follower catching up reads the log
	// once, so the cache mostly holds index blocks.
	pebbleCacheSize = 16 << 20
	// pebbleMemTables memtables may queue behind a slow flush (256 MiB
	// with the default memtable).
	pebbleMemTables = 4
	// pebbleMaxOpenFiles keeps the file descriptors of one node's log
	// modest (Pebble's default is 1000).
	pebbleMaxOpenFiles = 256
)

// raftLogValueSeparation keeps entries of blobMinSize bytes or more in
// blob files, out of the sstables: entries live until their group's
// snapshot, and a busy node's reach sstables, where every compaction
// rewrote them (with 12 partitions under load, 43% of a node's CPU went to
// compactions). Separated, compactions move keys and references only; a
// blob file goes once no key refers to it, or is rewritten when more than
// half of its values are dead and it is blobRewriteAge old (a group that
// went idle keeps its last entries).
func raftLogValueSeparation() pebble.ValueSeparationPolicy {
	return pebble.ValueSeparationPolicy{Enabled: true, MinimumSize: blobMinSize, MaxBlobReferenceDepth: 10,
		RewriteMinimumAge: blobRewriteAge, TargetGarbageRatio: 0.5}
}

// closeFailedWait bounds the close of the DB, whose own goroutines may be
// stuck for good after a failure.
const closeFailedWait = 5 * time.Second

const (
	blobMinSize    = 512
	blobRewriteAge = 5 * time.Minute
)

// DefaultLogMemTable is the node-wide log store's memtable on a large
// disk. Raft entries live until their group's next snapshot, which then
// deletes all but the trailing ones with one range deletion: a large
// memtable lets a modestly loaded node's entries die before they are
// flushed; a busier node's do reach L0, where delete-only compactions
// drop whole files once range deletions cover them.
const DefaultLogMemTable = 64 << 20

// LogMemTableFor is the memtable for a log store on a disk of diskBytes
// (Config.LogMemTable): 1/128 of it, between 1 MiB and
// DefaultLogMemTable. Each WAL file is preallocated at 1.1 times the
// memtable and Pebble keeps up to five old ones for reuse, so the WAL
// takes about 5% of the disk at most.
func LogMemTableFor(diskBytes int64) int64 {
	return min(max(diskBytes/128, 1<<20), DefaultLogMemTable)
}

// LogStoreHeadroom is what the log store with memtable memTable may
// still write once its groups stop taking entries: the next WAL file,
// the flush of a full memtable and a new MANIFEST.
func LogStoreHeadroom(memTable int64) int64 {
	if memTable <= 0 {
		memTable = DefaultLogMemTable
	}
	return memTable*11/10 + memTable + 1<<20
}

func pebbleOptions(c pebbleConfig, cache *pebble.Cache, h *health) *pebble.Options {
	fs, memTable := c.fs, c.memTable
	if fs == nil {
		fs = privateFS{vfs.Default} // files 0600 (filemodes.go)
	}
	fs = &spaceFS{FS: fs, h: h} // ENOSPC waits (pebblespace.go)
	if memTable <= 0 {
		memTable = DefaultLogMemTable
	}
	o := &pebble.Options{
		FS:                          fs,
		Cache:                       cache,
		MemTableSize:                uint64(memTable),
		MemTableStopWritesThreshold: pebbleMemTables,
		MaxOpenFiles:                pebbleMaxOpenFiles,
		Logger:                      pebbleLogger{l: c.logger.With("logger", "pebble"), h: h},
		// One compaction at a time, two when L0 falls behind: the node's
		// CPU is for serving.
		CompactionConcurrencyRange: func() (int, int) { return 1, 2 },
		// An explicit format, as Pebble advises (its default is the oldest
		// it reads): the newest of v2.1.7, whose WAL records its syncs, so
		// that recovery tells a torn unsynced tail from corruption.
		FormatMajorVersion: pebble.FormatValueSeparation,
	}
	o.Experimental.ValueSeparationPolicy = raftLogValueSeparation
	return o
}

// pebbleID returns the DB's id, creating it in a new DB.
func pebbleID(db *pebble.DB) (string, error) {
	v, closer, err := db.Get(pebbleIDKey)
	if err == nil {
		id := string(v)
		_ = closer.Close()
		return id, nil
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		return "", fmt.Errorf("multiraft: raft log store: %w", err)
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	id := hex.EncodeToString(b[:])
	if err := db.Set(pebbleIDKey, []byte(id), pebble.Sync); err != nil {
		return "", fmt.Errorf("multiraft: raft log store: %w", err)
	}
	return id, nil
}

// open registers and returns the view of group name.
func (pl *pebbleLog) open(name string) (*pebbleView, error) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.closed || pl.released {
		return nil, ErrClosed
	}
	if pl.views[name] != nil {
		return nil, fmt.Errorf("%w: %q", ErrGroupExists, name)
	}
	v := newPebbleView(pl, name)
	pl.views[name] = v
	return v, nil
}

// remove deletes every key of group name, durably; the group must not be
// open. A view registered meanwhile keeps the name (an open of it fails
// with ErrGroupExists) and the DB open, so the store's lock is not held
// across the fsync: other groups open meanwhile.
func (pl *pebbleLog) remove(name string) error {
	pl.mu.Lock()
	if pl.closed || pl.released {
		pl.mu.Unlock()
		return ErrClosed
	}
	if pl.views[name] != nil {
		pl.mu.Unlock()
		return fmt.Errorf("multiraft: remove the state of group %q: %w", name, ErrGroupExists)
	}
	v := newPebbleView(pl, name)
	pl.views[name] = v
	pl.mu.Unlock()
	return errors.Join(v.clear(), pl.closeView(v))
}

// closeView unregisters v, and closes the DB if it was the last view of a
// released DB.
func (pl *pebbleLog) closeView(v *pebbleView) error {
	pl.mu.Lock()
	if pl.views[v.name] == v {
		delete(pl.views, v.name)
	}
	last := pl.released && len(pl.views) == 0 && !pl.closed
	pl.closed = pl.closed || last
	pl.mu.Unlock()
	if last {
		return pl.closeDB()
	}
	return nil
}

// release is the Host's Close: the DB closes now if no view is open,
// otherwise when the last one closes.
func (pl *pebbleLog) release() error {
	pl.mu.Lock()
	last := !pl.released && len(pl.views) == 0 && !pl.closed
	pl.released = true
	pl.closed = pl.closed || last
	pl.mu.Unlock()
	if last {
		return pl.closeDB()
	}
	return nil
}

// closeDB stops the flusher, syncs what write caching left unsynced and
// closes the DB. A DB that does not close within closeFailedWait (a
// failed one whose own goroutines are stuck) is abandoned.
func (pl *pebbleLog) closeDB() error {
	close(pl.stop)
	<-pl.done
	<-pl.budgetDone
	pl.fmu.Lock()
	dirty := pl.dirty
	pl.fmu.Unlock()
	var err error
	if dirty {
		err = pl.write(func() error { return pl.db.LogData(nil, pebble.Sync) })
	}
	close(pl.health.closing) // writes waiting for space give up
	closed := make(chan error, 1)
	go func() { closed <- guarded(pl.health, pl.db.Close) }()
	select {
	case cerr := <-closed:
		if err == nil {
			err = cerr
		}
	case <-time.After(closeFailedWait):
		err = fmt.Errorf("%w: not closed within %v, abandoned", ErrLogStoreFailed, closeFailedWait)
	}
	if err != nil {
		pl.log.Error("closing the raft log store", "err", err)
		return fmt.Errorf("multiraft: close raft log store: %w", err)
	}
	return nil
}

// noteUnsynced records a write committed without fsync by a group whose
// write caching flushes within flush.
func (pl *pebbleLog) noteUnsynced(flush time.Duration) {
	dl := time.Now().Add(flush)
	pl.fmu.Lock()
	pl.marks++
	kick := !pl.dirty || dl.Before(pl.deadline)
	if kick {
		pl.deadline = dl
	}
	pl.dirty = true
	pl.fmu.Unlock()
	if kick {
		select {
		case pl.kick <- struct{}{}:
		default: // a kick is pending already
		}
	}
}

// flusher fsyncs the WAL at the deadline set by unsynced writes, until
// close. It is idle while nothing is unsynced.
func (pl *pebbleLog) flusher() {
	defer close(pl.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		pl.fmu.Lock()
		dirty, dl := pl.dirty, pl.deadline
		pl.fmu.Unlock()
		var fire <-chan time.Time
		if dirty {
			timer.Reset(time.Until(dl))
			fire = timer.C
		}
		select {
		case <-pl.stop: // closing: closeDB syncs what is left
			timer.Stop()
			return
		case <-pl.kick: // a first unsynced write, or an earlier deadline
			timer.Stop()
		case <-fire:
			pl.syncWAL()
		}
	}
}

// syncWAL fsyncs the WAL, and with it every write committed before.
func (pl *pebbleLog) syncWAL() {
	pl.fmu.Lock()
	marks := pl.marks
	pl.dirty = false
	pl.fmu.Unlock()
	// A write noted after this point may not be covered: it sets dirty again.
	if err := pl.write(func() error { return pl.db.LogData(nil, pebble.Sync) }); err != nil {
		pl.log.Error("syncing the raft log store", "err", err)
		pl.fmu.Lock()
		if !pl.dirty {
			pl.dirty, pl.deadline = true, time.Now().Add(time.Second)
		}
		pl.fmu.Unlock()
		return
	}
	pl.syncs.Add(1)
	pl.fmu.Lock()
	pl.synced = max(pl.synced, marks)
	pl.fmu.Unlock()
}
