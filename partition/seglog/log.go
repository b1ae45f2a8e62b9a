// Package seglog is a partition's on-disk log, the bottom of a record's
// path (partition.Replica -> fsm -> seglog): the FSM appends to it, and
// readers read from it.
//
// The log (Log) stores Kafka v2 RecordBatch bytes exactly as given, in
// segment files named by their first offset ("%020d.log"), each with a
// sparse offset and time index ("%020d.index"). The broker rewrites only a
// batch's base offset and partition leader epoch (AppendAt); records are
// never decoded.
//
// A caller of the log has these duties, in order:
//
//  1. Open a directory with Open, from one Log and one process at a
//     time. Open repairs crash damage: it checks every batch of the last
//     segment (header, length, CRC32C, offset continuity) and cuts the file
//     after the last whole valid batch; earlier segments are trusted.
//  2. Decide what to keep. Appends are not fsynced: after a crash only what
//     the last Sync (or Close) covered is guaranteed to be intact. A caller
//     that tracks its own durable point (the FSM's checkpoint) calls
//     TruncateTo with it, or Reset to start over from a snapshot, before
//     appending again.
//  3. Write from one goroutine: Append, AppendAt, TruncateTo, Reset and Sync
//     are the writer's methods (they are serialized, but concurrent writers
//     make no sense as each append must start at EndOffset). Any number of
//     goroutines may call Read, CopyTo, Batches, OffsetForTimestamp,
//     StartOffset, EndOffset and Size at the same time; they never see a
//     partial batch.
//  4. Call Sync at checkpoints to make the appended bytes durable. A
//     failed fsync is final: the kernel may have dropped the unwritten
//     pages, so from then on Sync, the writer's methods and Close return an
//     error wrapping ErrSyncFailed; only reopening the log (which recovers
//     from what is on disk) makes it usable again.
//  5. Call Close at shutdown; it writes the active segment's index and syncs.
//     TruncateTo, Reset and Close wait for running reads to finish.
package seglog

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/record"
)

// Options tunes a Log. The zero value gives the defaults.
type Options struct {
	// SegmentBytes rolls the active segment when an append would take it
	// past this many bytes (a single larger batch gets a segment of its
	// own). Default 128 MiB; at most math.MaxUint32.
	SegmentBytes int64
	// IndexIntervalBytes is the spacing of sparse index entries in log
	// bytes. Default 4096.
	IndexIntervalBytes int
	// FlushBytes makes the log Sync in the background after this many
	// bytes were appended since it last asked for one, so the disk sees a
	// steady trickle instead of the burst a snapshot's Sync would
	// otherwise write (hundreds of MB, competing with the Raft log's
	// fsyncs). Appends never wait for it. Default 8 MiB; negative: never.
	FlushBytes int64
	// CacheKeepBytes: after each Sync, segment data written more than this
	// many bytes before the log's end is dropped from the OS page cache
	// (posix_fadvise DONTNEED), so that new writes reuse those pages
	// rather than take fresh ones, which a VM that hands free memory back
	// to its host (virtio-balloon free page reporting) faults in again on
	// the first write: that fault cost more server CPU than everything
	// else a record costs (docs/performance.md). Readers of the newest
	// bytes still find them cached; older ones read from the disk, as
	// Redpanda's do. Default 8 MiB; negative: never drop.
	CacheKeepBytes int64
	// SegmentAge rolls the active segment at the first append after it
	// has been open this long (Kafka's segment.ms), so that retention can
	// delete a quiet partition's data. Zero: never by age.
	SegmentAge time.Duration
	// Logger receives recovery warnings and segment events; nil discards.
	Logger *slog.Logger
	// FS holds the log's files. Nil means vfs.OS.
	FS vfs.FS
	// Files bounds the segment files open at once, shared by every log of
	// a node; nil gives the log a cache of its own without a limit.
	Files *vfs.FileCache
	// OnFsync, if set, is called with the duration of every file fsync
	// the log makes (segments and indexes). It must be quick.
	OnFsync func(time.Duration)
}

// Defaults of Options.
const (
	DefaultSegmentBytes       = 128 << 20
	DefaultIndexIntervalBytes = 4096
	DefaultFlushBytes         = 8 << 20
	DefaultCacheKeepBytes     = 8 << 20
)

// rewrittenHead is the part of a batch that AppendAt rewrites: the base
// offset, the batch length (unchanged) and the partition leader epoch.
const rewrittenHead = 16

func (o Options) resolve() (Options, error) {
	switch {
	case o.SegmentBytes == 0:
		o.SegmentBytes = DefaultSegmentBytes
	case o.SegmentBytes < 0 || o.SegmentBytes > math.MaxUint32:
		return o, fmt.Errorf("%w: SegmentBytes %d not in [1, %d]", ErrInvalidOptions, o.SegmentBytes, int64(math.MaxUint32))
	}
	switch {
	case o.IndexIntervalBytes == 0:
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	case o.IndexIntervalBytes < 0:
		return o, fmt.Errorf("%w: IndexIntervalBytes %d is negative", ErrInvalidOptions, o.IndexIntervalBytes)
	}
	if o.FlushBytes == 0 {
		o.FlushBytes = DefaultFlushBytes
	}
	if o.CacheKeepBytes == 0 {
		o.CacheKeepBytes = DefaultCacheKeepBytes
	}
	if o.Logger == nil {
		o.Logger = logging.Discard()
	}
	o.FS = vfs.Or(o.FS)
	if o.Files == nil {
		o.Files = vfs.NewFileCache(0)
	}
	return o, nil
}

// fsyncFunc is how the log fsyncs a file: File.Sync, timed for OnFsync.
func (o Options) fsyncFunc() func(vfs.File) error {
	observe := o.OnFsync
	if observe == nil {
		return vfs.File.Sync
	}
	return func(f vfs.File) error {
		start := time.Now()
		err := f.Sync()
		observe(time.Since(start))
		return err
	}
}

// Log is a partition's segmented log of record batches. See the package
// documentation for the caller's duties.
//
// Locks are taken in the order syncSem, wmu, truncMu, mu.
type Log struct {
	dir    string
	opts   Options
	logger *slog.Logger
	fsync  func(vfs.File) error // Options.fsyncFunc

	// syncSem (capacity 1) serializes Sync's fsync phase and Close, so
	// that a Sync returns only after every fsync started before it has
	// finished: it takes the dirty flags a running Sync cleared as done.
	// It is a channel rather than a mutex so that a Sync waiting for
	// another counts as blocked under testing/synctest.
	syncSem chan struct{}

	// wmu serializes the writer's methods (Append, AppendAt, TruncateTo,
	// Reset, Sync, Close). It guards whead, dirDirty, werr, serr and the
	// segments' dirty flags, and lets the writer read mu-guarded fields
	// without mu, since only a wmu holder changes them.
	wmu      sync.Mutex
	whead    [rewrittenHead]byte // AppendAt's rewritten head of the batch
	dirDirty bool                // files created or removed since the last directory fsync
	werr     error               // sticky: a failed write could not be undone
	serr     error               // sticky until reopen: an fsync failed (wraps ErrSyncFailed)
	unsynced int64               // bytes appended since the flusher was last kicked
	// activeSince is when the active segment was created (or the log
	// opened), for Options.SegmentAge: a local layout choice, not
	// replicated state, so the wall clock is fine here.
	activeSince time.Time

	// The background flusher (nil channels when FlushBytes < 0): appends
	// kick it through flushKick (never blocking); Close closes flushStop
	// and waits for flushDone.
	flushKick chan struct{}
	flushStop chan struct{}
	flushDone chan struct{}
	stopOnce  sync.Once

	// truncMu keeps segment files, and their bytes below the published
	// sizes, in place. Readers hold it shared for the whole of their file
	// I/O; TruncateTo, Reset and Close hold it exclusively while they
	// shrink, delete or close files. Append does not take it: it only adds
	// bytes past the published sizes.
	truncMu sync.RWMutex

	// mu guards the published view: segs (and each segment's size, next
	// and idx), end, bytes and closed. Readers hold it shared only to take
	// a snapshot, never during I/O; the writer holds it exclusively only to
	// publish a change. closed is set with all three locks held.
	mu     sync.RWMutex
	segs   []*segment // in offset order; only the last one may be empty
	start  int64      // log start offset: >= segs[0].base, <= end
	end    int64      // log end offset: next offset to assign
	bytes  int64      // sum of segment sizes
	closed bool
}

// Open opens the log in dir, creating the directory and an empty log
// starting at offset 0 if needed, and repairs a torn tail (see the package
// documentation). Files in dir that are not segments or indexes are left
// alone.
func Open(dir string, opts Options) (*Log, error) {
	opts, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if err := vfs.MkdirAllSync(opts.FS, dir, vfs.DirMode); err != nil {
		return nil, fmt.Errorf("partition: open log: %w", err)
	}
	l := &Log{dir: dir, opts: opts, logger: opts.Logger.With("dir", dir), fsync: opts.fsyncFunc(), syncSem: make(chan struct{}, 1)}
	if err := l.loadSegments(); err != nil {
		for _, s := range l.segs {
			s.f.Close()
		}
		return nil, err
	}
	last := l.segs[len(l.segs)-1]
	l.start, l.end = l.segs[0].base, last.next
	l.activeSince = time.Now()
	for _, s := range l.segs {
		l.bytes += s.size
	}
	l.logger.Debug("log opened", "start", l.segs[0].base, "end", l.end, "segments", len(l.segs), "bytes", l.bytes)
	if opts.FlushBytes > 0 {
		l.flushKick = make(chan struct{}, 1)
		l.flushStop = make(chan struct{})
		l.flushDone = make(chan struct{})
		go l.flusher()
	}
	return l, nil
}

// StartOffset is the log start offset: the first offset a reader may ask
// for. It is the first stored batch's base offset unless AdvanceStart moved
// it past that (an empty log's start equals its end).
func (l *Log) StartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.start
}

// EndOffset is the log end offset: the offset the next batch must start at.
func (l *Log) EndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.end
}

// Size is the number of bytes of batches across all segments.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.bytes
}

// Append writes one whole batch whose base offset must equal EndOffset.
// It checks the header, that the length field covers exactly len(batch)
// and the CRC32C; the batch is stored as given. The write is not fsynced.
func (l *Log) Append(batch []byte) error {
	h, err := record.Check(batch)
	if err != nil {
		return fmt.Errorf("partition: append: %w", err)
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.appendLocked(batch, nil, h)
}

// AppendAt writes one whole batch with its base offset and partition
// leader epoch replaced, leaving batch itself unchanged (the caller's bytes
// may be shared, as raft's log entries are). baseOffset must equal
// EndOffset. Only the header and the length are checked: the caller has
// checked the CRC, which does not cover the two replaced fields.
func (l *Log) AppendAt(batch []byte, baseOffset int64, leaderEpoch int32) error {
	h, err := record.ParseHeader(batch)
	if err == nil && h.Size() != len(batch) {
		err = &record.LengthError{Length: h.Length, Have: len(batch) - record.LogOverhead}
	}
	if err != nil {
		return fmt.Errorf("partition: append: %w", err)
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	// The rewritten head and the rest of the caller's bytes go out in one
	// vectored write: no copy of the whole batch.
	head := l.whead[:]
	copy(head, batch)
	record.SetBaseOffset(head, baseOffset)
	record.SetLeaderEpoch(head, leaderEpoch)
	h.BaseOffset, h.PartitionLeaderEpoch = baseOffset, leaderEpoch
	return l.appendLocked(head, batch[len(head):], h)
}

// appendLocked writes the batch head+rest, whose header is h, at the end
// of the log with one write call and then publishes it. The caller holds
// wmu.
func (l *Log) appendLocked(head, rest []byte, h record.Header) error {
	if err := l.writerErr(); err != nil {
		return err
	}
	switch {
	case h.BaseOffset != l.end:
		return &OffsetMismatchError{Got: h.BaseOffset, Want: l.end}
	}
	s := l.segs[len(l.segs)-1]
	n := int64(len(head) + len(rest))
	if s.size > 0 && (s.size+n > l.opts.SegmentBytes || h.BaseOffset-s.base > math.MaxUint32 || l.segmentAged()) {
		var err error
		if s, err = l.roll(h.BaseOffset); err != nil {
			return err
		}
	}
	// Pinned, the file stays open for the write and for the cut after a
	// failed one; failing to reopen it writes nothing and leaves the log
	// usable.
	if err := s.f.Pin(); err != nil {
		return fmt.Errorf("partition: append: %w", err)
	}
	defer s.f.Unpin()
	if _, err := s.f.WriteAtv([][]byte{head, rest}, s.size); err != nil {
		// Readers never look past s.size, but a later roll would seal
		// the stray bytes into the middle of the log: cut them off.
		if terr := s.f.Truncate(s.size); terr != nil {
			l.werr = fmt.Errorf("partition: log unusable after failed write: %w", errors.Join(err, terr))
		}
		return fmt.Errorf("partition: append: %w", err)
	}
	s.dataDirty = true
	if l.flushKick != nil {
		if l.unsynced += n; l.unsynced >= l.opts.FlushBytes {
			l.unsynced = 0
			select {
			case l.flushKick <- struct{}{}:
			default: // a kick is pending already
			}
		}
	}
	l.mu.Lock()
	s.idx.note(uint32(h.BaseOffset-s.base), uint32(s.size), h.MaxTimestamp, l.opts.IndexIntervalBytes)
	s.idx.noteEpoch(uint32(h.BaseOffset-s.base), h.PartitionLeaderEpoch)
	s.size += n
	s.next = h.NextOffset()
	l.end = s.next
	l.bytes += n
	l.mu.Unlock()
	return nil
}

// writerErr is why the writer's methods must refuse now: the log is
// closed, an fsync failed, or a write could not be undone. The caller
// holds wmu.
func (l *Log) writerErr() error {
	switch {
	case l.closed:
		return ErrClosed
	case l.serr != nil:
		return l.serr
	}
	return l.werr
}

// roll seals the active segment (writing its index file) and starts a new
// one at base. The caller holds wmu.
//
// The sealed segment's data is fsynced before the new segment exists:
// Open checks only the last segment in full and trusts earlier ones, so
// a sealed segment must never be less durable than the file after it. Its
// index need not be: Open rebuilds an index that does not match.
func (l *Log) roll(base int64) (*segment, error) {
	old := l.segs[len(l.segs)-1]
	if err := old.writeIndex(); err != nil {
		return nil, err
	}
	if old.dataDirty {
		if err := old.syncParts(true, false, l.fsync); err != nil {
			return nil, l.failSync(err)
		}
		old.dataDirty = false
	}
	s, err := createSegment(l.files(), l.dir, base)
	if err != nil {
		return nil, err
	}
	l.dirDirty = true
	l.activeSince = time.Now()
	l.mu.Lock()
	l.segs = append(l.segs, s)
	l.mu.Unlock()
	l.logger.Debug("rolled segment", "sealed", old.base, "sealed_bytes", old.size, "new", base)
	return s, nil
}

// Close writes the active segment's index, syncs, and closes the files.
// It waits for running reads; every later call returns ErrClosed.
func (l *Log) Close() error { return l.close(true) }

// Discard is Close for a log whose directory is removed next: the open
// segment's index is not written and nothing is synced.
func (l *Log) Discard() error { return l.close(false) }

func (l *Log) close(durable bool) error {
	l.stopFlusher()
	// syncSem: a running Sync's fsync result must be known (and a failure
	// recorded) before Close syncs and reports.
	l.syncSem <- struct{}{}
	defer func() { <-l.syncSem }()
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	var errs []error
	if durable && l.werr == nil && l.serr == nil {
		errs = append(errs, l.segs[len(l.segs)-1].writeIndex())
	}
	if durable {
		errs = append(errs, l.syncLocked())
	}
	for _, s := range l.segs {
		errs = append(errs, s.f.Close())
	}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return errors.Join(errs...)
}
