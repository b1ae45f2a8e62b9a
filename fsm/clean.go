package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"iter"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/partition/compact"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

// Cleaning (cleanup.policy=compact, issue 30). The leader proposes
// CmdClean with the offset to clean up to, its clock and the topic's
// delete.retention.ms; every replica seals what lies below that offset at
// once (on the FSM goroutine) and cleans it later on its cleaner
// goroutine, in command order, with the producer state of the command's
// entry: the same bytes on every replica (package compact). A trim, a
// checkpoint and a restore wait for the cleanings queued before them, so
// that a trim and a cleaning apply in Raft order and no checkpoint claims
// an entry whose cleaning has not been done. Nor does the applied-index
// journal: while a cleaning is pending it records the entry before the
// command, so that a crash replays the command (cleaning is idempotent).

// EncodeClean returns the command that cleans the log below upTo at the
// leader's time nowMs, keeping tombstones for deleteRetentionMs, mapping
// the keys from dirtyFrom on into at most mapBytes (compact.Params; the
// leader's CleanedTo vouches that the log below dirtyFrom is clean). A
// cleaning that maps the whole range without a bound (both 0) is written
// in the 24-byte form, which a build before the dirty part's fields
// applies too; such a build refuses the longer one.
func EncodeClean(upTo, nowMs, deleteRetentionMs, dirtyFrom, mapBytes int64) []byte {
	fields := []int64{upTo, nowMs, deleteRetentionMs, dirtyFrom, mapBytes}
	if dirtyFrom == 0 && mapBytes == 0 {
		fields = fields[:3]
	}
	b := []byte{byte(CmdClean)}
	for _, v := range fields {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// CleanResult is what applying a CmdClean returns: the cleaning is queued,
// not done.
type CleanResult struct {
	Queued bool // false when there was nothing to clean or the log cannot be cleaned
	Err    error
}

// cleanable is what a log needs for cleanings (seglog.Log has it); an FSM
// over a log without it ignores CmdClean.
type cleanable interface {
	RollBefore(offset int64) error
	Segments() []seglog.SegmentInfo
	SealedBatches(bases ...int64) iter.Seq2[[]byte, error]
	NewReplacement(base, next int64) (*seglog.Replacement, error)
}

func (f *FSM) applyClean(body []byte, index uint64) *CleanResult {
	upTo := int64(binary.BigEndian.Uint64(body))
	now := int64(binary.BigEndian.Uint64(body[8:]))
	retention := int64(binary.BigEndian.Uint64(body[16:]))
	var dirtyFrom, mapBytes int64 // an older leader's command maps the whole range
	if len(body) == cleanBodySize {
		dirtyFrom, mapBytes = int64(binary.BigEndian.Uint64(body[24:])), int64(binary.BigEndian.Uint64(body[32:]))
	}
	cl, ok := f.log.(cleanable)
	if !ok || upTo <= f.log.StartOffset() {
		return &CleanResult{}
	}
	upTo = min(upTo, f.log.EndOffset())
	// The entry before this one (its term is still f.appliedTerm); a
	// cleaning does not move the log end.
	prev := journalRecord{index: index - 1, term: f.appliedTerm, end: f.log.EndOffset()}
	if err := f.checkpointBefore(upTo, prev); err != nil {
		return &CleanResult{Err: err}
	}
	if err := f.retry("roll before cleaning", func() error { return cl.RollBefore(upTo) }); err != nil {
		return &CleanResult{Err: err}
	}
	last := map[int64]int64{} // producer id → base offset of its last batch
	for e := range f.table.All() {
		if n := len(e.Batches); n > 0 {
			last[e.ProducerID] = e.Batches[n-1].BaseOffset
		}
	}
	p := compact.Params{NowMs: now, DeleteRetentionMs: retention, Aborted: f.table.AbortedTxns(), DirtyFrom: dirtyFrom, MapBytes: mapBytes,
		KeepEmpty: func(h record.Header) bool { b, ok := last[h.ProducerID]; return ok && b == h.BaseOffset }}
	f.cleaner.enqueue(cleanTask{log: cl, start: f.log.StartOffset(), upTo: upTo, params: p, before: prev})
	return &CleanResult{Queued: true}
}

// checkpointBefore makes the state at prev durable unless the newest
// checkpoint already covers the log below upTo. A cleaning may remove
// transaction markers below upTo (partition/compact), which recovery,
// rebuilding the producer state from the stored batch headers after its
// checkpoint, must then not need.
func (f *FSM) checkpointBefore(upTo int64, prev journalRecord) error {
	f.cpMu.Lock()
	covered := f.cpEnd >= upTo
	f.cpMu.Unlock()
	if covered {
		return nil
	}
	cp := checkpoint{index: prev.index, term: prev.term, start: f.log.StartOffset(), end: prev.end,
		table: f.table.AppendEncode(nil)}
	return f.retry("checkpoint before cleaning", func() error { return f.checkpoint(cp) })
}

// cleanTask is one queued cleaning.
type cleanTask struct {
	log         cleanable
	start, upTo int64
	params      compact.Params
	before      journalRecord // the applied point just before the command
}

// cleaner runs queued cleanings one at a time, in order, on a goroutine
// that runs only while some are queued (so an idle FSM holds none). Its
// owner is the FSM: Close waits for it. A cleaning that fails on storage
// is retried until it succeeds or the FSM stops, as an apply is: skipped,
// it would leave this replica's bytes unlike the others'. One given up at
// Stop is abandoned: no checkpoint may claim it, and the journal stays
// before it, so the next start replays its command.
type cleaner struct {
	logger *slog.Logger
	stop   <-chan struct{} // the FSM's: closed by Stop
	slots  chan struct{}   // Config.CleanSlots; nil: no bound
	fs     vfs.FS          // holds cleanedFile in dir
	dir    string

	mu        sync.Mutex  // guards queue, running, abandoned, cleanTo, stats and runs
	idle      *sync.Cond  // signalled when the queue is empty and nothing runs
	queue     []cleanTask // the first one runs; removed when done
	running   bool
	abandoned *journalRecord // the point before the first cleaning given up, if any
	cleanTo   int64          // the log below is clean (no key twice) since this start
	stats     compact.Stats  // of every cleaning so far
	runs      int
}

// errCleaningAbandoned is a checkpoint refused after a cleaning was given
// up at Stop: it would claim an entry whose cleaning is not done.
var errCleaningAbandoned = errors.New("fsm: a cleaning was given up; no checkpoint until the next start replays it")

func newCleaner(logger *slog.Logger, stop <-chan struct{}, slots chan struct{}, fsys vfs.FS, dir string, end int64) *cleaner {
	c := &cleaner{logger: logger, stop: stop, slots: slots, fs: fsys, dir: dir}
	c.idle = sync.NewCond(&c.mu)
	c.cleanTo = min(readCleaned(fsys, dir), end) // a recovery may have cut the log shorter
	return c
}

// cleanedFile keeps where this replica's log is clean up to (CleanedTo)
// across restarts, so that a leader's first cleaning after one need not
// map the log from its start. It describes this replica's bytes, not
// replicated state; it is written after each cleaning that moves it,
// without fsync (a cleaning's swap is durable before), and one lost or
// torn reads as 0.
const cleanedFile = "cleaned"

func readCleaned(fsys vfs.FS, dir string) int64 {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, cleanedFile))
	if err != nil || len(b) != 12 || crc32.Checksum(b[:8], crcTable) != binary.BigEndian.Uint32(b[8:]) {
		return 0
	}
	return max(int64(binary.BigEndian.Uint64(b)), 0)
}

// writeCleaned records c.cleanTo; the caller holds mu.
func (c *cleaner) writeCleaned() {
	b := binary.BigEndian.AppendUint64(nil, uint64(c.cleanTo))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	if err := vfs.WriteFile(c.fs, filepath.Join(c.dir, cleanedFile), b, vfs.FileMode); err != nil {
		c.logger.Warn("cannot record where the log is clean; the first cleaning after a restart maps it all", "err", err)
	}
}

func (c *cleaner) enqueue(t cleanTask) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queue = append(c.queue, t)
	if !c.running {
		c.running = true
		go c.run()
	}
}

// wait returns once every cleaning queued so far is done or given up; it
// returns errCleaningAbandoned if one was given up.
func (c *cleaner) wait() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.running {
		c.idle.Wait()
	}
	if c.abandoned != nil {
		return errCleaningAbandoned
	}
	return nil
}

// pendingBefore is the applied point before the oldest cleaning not yet
// done; ok is false when none is pending.
func (c *cleaner) pendingBefore() (journalRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.abandoned != nil:
		return *c.abandoned, true
	case len(c.queue) == 0:
		return journalRecord{}, false
	}
	return c.queue[0].before, true
}

func (c *cleaner) run() {
	c.mu.Lock()
	for len(c.queue) > 0 {
		t := c.queue[0]
		if c.abandoned != nil {
			// After one given up none may run: the next start replays
			// them all in order, and one run out of order would set other
			// delete horizons than the other replicas' did.
			c.queue = c.queue[1:]
			continue
		}
		c.mu.Unlock()
		st, reached, err := c.cleanInSlot(t)
		c.mu.Lock()
		switch {
		case errors.Is(err, ErrClosed):
			c.abandoned = &t.before
		case err == nil && reached > c.cleanTo:
			c.cleanTo = reached
			c.writeCleaned()
		}
		c.queue = c.queue[1:]
		c.stats.Add(st)
		c.runs++
	}
	c.running = false
	c.idle.Broadcast()
	c.mu.Unlock()
}

// cleanInSlot runs t (cleanRetrying) once a slot is free; ErrClosed if
// the FSM stops first.
func (c *cleaner) cleanInSlot(t cleanTask) (compact.Stats, int64, error) {
	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
			defer func() { <-c.slots }()
		case <-c.stop:
			return compact.Stats{}, 0, ErrClosed
		}
	}
	return c.cleanRetrying(t)
}

// cleanState is where the log is clean up to and whether a cleaning is
// queued or running.
func (c *cleaner) cleanState() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cleanTo, c.running
}

// forgetClean drops the clean point, durably: the log is about to be
// replaced.
func (c *cleaner) forgetClean() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanTo = 0
	err := c.fs.Remove(filepath.Join(c.dir, cleanedFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fsm: forget the clean point: %w", err)
	}
	if err := c.fs.SyncDir(c.dir); err != nil {
		return fmt.Errorf("fsm: forget the clean point: %w", err)
	}
	return nil
}

// cleanRetrying runs t until it succeeds, fails on its data (the same on
// every replica, so the bytes stay as they were on all of them), or the
// FSM stops while storage fails or the log is closed (ErrClosed).
func (c *cleaner) cleanRetrying(t cleanTask) (compact.Stats, int64, error) {
	for wait := retryMin; ; wait = min(2*wait, retryMax) {
		res, err := t.clean()
		var se *cleanStorageError
		if errors.Is(err, seglog.ErrClosed) {
			return compact.Stats{}, 0, ErrClosed // the log closed under it: a shutdown, or a crash in tests
		}
		if !errors.As(err, &se) {
			if err != nil {
				c.logger.Warn("cleaning failed on the log's data; the bytes stay as they are", "up_to", t.upTo, "err", err)
			}
			return res.Stats, min(res.Reached, t.upTo), err
		}
		c.logger.Error("cleaning failed on storage; retrying", "up_to", t.upTo, "err", err)
		tm := time.NewTimer(wait)
		select {
		case <-c.stop:
			tm.Stop()
			return compact.Stats{}, 0, ErrClosed
		case <-tm.C:
		}
	}
}

// cleanStorageError is a cleaning's failure to read or write the log.
type cleanStorageError struct{ err error }

func (e *cleanStorageError) Error() string { return "fsm: cleaning: " + e.err.Error() }
func (e *cleanStorageError) Unwrap() error { return e.err }

// clean cleans the sealed segments holding offsets in [start, upTo): the
// batches below the one holding start and from upTo on stay as they are,
// the ones between are cleaned (compact.CleanTo), and the segments are
// swapped for one holding the result. It streams: its memory is the
// keys' map and a few buffers, whatever the segments' size. The result's
// Reached is where the map's bound ended it.
func (t cleanTask) clean() (compact.Result, error) {
	segs := t.log.Segments()
	first, last := -1, -1
	for i, s := range segs {
		if s.Active || s.Base >= t.upTo {
			break
		}
		if s.Next > t.start {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return compact.Result{Reached: t.upTo}, nil
	}
	// Reading and writing the files fails on storage (retried); a batch
	// that does not parse fails on the data, as on every replica.
	var be *seglog.BoundaryError
	storage := func(err error) error {
		if err == nil || errors.As(err, &be) || errors.Is(err, seglog.ErrBadReplacement) || errors.Is(err, record.ErrInvalidBatch) {
			return err
		}
		return &cleanStorageError{err}
	}
	var bases []int64
	for _, s := range segs[first : last+1] {
		bases = append(bases, s.Base)
	}
	batches := func(yield func([]byte, error) bool) {
		for b, err := range t.log.SealedBatches(bases...) {
			if !yield(b, storage(err)) || err != nil {
				return
			}
		}
	}
	keep := func(h record.Header) bool { return h.NextOffset() <= t.start || h.BaseOffset >= t.upTo }
	r, err := t.log.NewReplacement(segs[first].Base, segs[last].Next)
	if err != nil {
		return compact.Result{}, &cleanStorageError{err}
	}
	defer r.Abort() // after Commit, nothing
	res, err := compact.CleanTo(batches, t.params, keep, func(b []byte) error { return storage(r.Add(b)) })
	if err != nil || !res.Changed {
		return res, err
	}
	if err := r.Commit(); err != nil {
		return res, &cleanStorageError{err}
	}
	return res, nil
}

// Cleanings returns how many cleanings this FSM has run and what they did.
func (f *FSM) Cleanings() (int, compact.Stats) {
	f.cleaner.mu.Lock()
	defer f.cleaner.mu.Unlock()
	return f.cleaner.runs, f.cleaner.stats
}

// CleanedTo is where this replica's log is clean up to (no key twice
// below it, as its cleanings left it, kept across restarts; 0 none), and
// whether a cleaning is queued or running. A leader that proposes the
// next cleaning when none is pending may map it from there
// (EncodeClean's dirtyFrom): every replica has then cleaned as far, in
// the same order.
func (f *FSM) CleanedTo() (offset int64, pending bool) { return f.cleaner.cleanState() }
