// Package fsm is the state machine of one partition replica: it applies
// committed Raft log entries to the partition's on-disk log and producer
// table, identically on every replica.
//
// A caller (the partition replica) has these duties, in order:
//
//  1. Open the partition's log and call New with it and a directory of the
//     FSM's own. New recovers: it loads the last checkpoint, cuts the log
//     back to the newest applied point that is consistent on disk, and
//     rebuilds the producer table up to there.
//  2. Hand the FSM to raft.NewRaft with Config.NoSnapshotRestoreOnStart set.
//     Raft then replays entries after its newest snapshot; the FSM skips
//     every entry at or below its own durable applied index.
//  3. Wrap the snapshot store with OpenSnapshot (see SnapshotStore in the
//     partition package): Persist stores only a reference to the log, and
//     OpenSnapshot expands it into the full form that followers install.
//  4. At shutdown call Stop (a storage retry in progress gives up, see
//     StorageErr), then raft.Shutdown, then Close, which syncs and
//     checkpoints so that the next start replays nothing.
//
// Apply is pure given its inputs: validation and offset assignment come from
// the log and the producer table alone, with no clock, randomness or map
// order, so replicas end byte-identical (docs/contract.md B3). The leader epoch
// stamped into each stored batch is the Raft term of its entry.
//
// Transactions: a transactional batch opens its producer's transaction on
// the partition; a CmdEndTxn, proposed by the leader for the transaction
// coordinator's WriteTxnMarkers, writes a COMMIT or ABORT marker that the
// FSM builds itself and ends it (producerstate has the rules). The FSM
// publishes the last stable offset and the aborted transactions index for
// read_committed readers (LastStableOffset, AbortedTxns).
package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/internal/changes"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/producerstate"
	"github.com/minikafka/minikafka-go/record"
)

// Log is what the FSM needs of a partition's on-disk log
// (seglog.Log implements it). Exactly one goroutine writes; readers may
// run concurrently.
type Log interface {
	// Append stores one whole checked batch whose base offset equals
	// EndOffset.
	Append(batch []byte) error
	// AppendAt stores batch with its base offset and leader epoch replaced,
	// leaving the caller's slice unchanged.
	AppendAt(batch []byte, baseOffset int64, leaderEpoch int32) error
	StartOffset() int64
	EndOffset() int64
	// Size is the number of bytes of all stored batches.
	Size() int64
	// CopyTo writes the raw bytes of every batch below end.
	CopyTo(w io.Writer, end int64) (int64, error)
	// Batches yields the headers of stored batches from the one holding
	// from.
	Batches(from int64) iter.Seq2[record.Header, error]
	// Read returns whole stored batches from the one holding offset, at
	// least one, adding more while within maxBytes. Recovery reads the
	// transaction markers with it.
	Read(offset int64, maxBytes int) ([]byte, error)
	TruncateTo(offset int64) error
	Reset(start int64) error
	// AdvanceStart moves StartOffset up to offset (at most EndOffset),
	// deleting what lies wholly below it; not fsynced.
	AdvanceStart(offset int64) error
	// SizeBelow is the byte count CopyTo(w, end) writes.
	SizeBelow(end int64) (int64, error)
	Sync() error
}

// Config configures an FSM.
type Config struct {
	// Dir holds the FSM's checkpoint and applied-index journal. It must not
	// be shared with another FSM. It is created if missing.
	Dir string
	// Window is the number of batches remembered per producer for
	// duplicate detection. Zero means producerstate.DefaultWindow.
	Window int
	// Logger receives recovery messages. Nil discards.
	Logger *slog.Logger
	// MaxProducers bounds each partition's producer table: a new
	// producer's batch gets POLICY_VIOLATION while the table is full. It
	// decides produce outcomes, so every node of a cluster must use the
	// same value. Zero means DefaultMaxProducers; negative, no bound.
	MaxProducers int
	// Trimmed, if set, is called on the FSM goroutine after a CmdTrim
	// moved the log start offset. It must not block; the replica uses it
	// to take a Raft snapshot that no longer refers to the trimmed data.
	Trimmed func()
	// FS holds the checkpoint and the journal. Nil means vfs.OS.
	FS vfs.FS
	// Files keeps the journal open, under the node's limit of open files
	// (the log's seglog.Options.Files); nil gives the FSM a cache of its own.
	Files *vfs.FileCache
	// CleanSlots, if set, bounds the cleanings that run at once across the
	// FSMs sharing it (a node's log_cleaner_threads): a cleaning holds a
	// slot while it runs, and each holds its range in memory.
	CleanSlots chan struct{}
	// Observer, if set, is told of every batch the FSM appends, in log
	// order, and of every Restore (after which the log holds other
	// batches). It runs on the FSM goroutine and must be deterministic, as
	// the FSM is: an internal topic keeps its materialised view with it.
	Observer Observer
}

// Observer follows the batches an FSM appends (Config.Observer).
type Observer interface {
	// Appended is called with each batch appended, as it was proposed
	// (before the log stamped its offset and epoch).
	Appended(batch []byte)
	// Restored is called after Restore replaced the log's contents.
	Restored()
}

// DefaultMaxProducers is Config.MaxProducers's default.
const DefaultMaxProducers = 100_000

// TrimResult is what applying a CmdTrim returns.
type TrimResult struct {
	// StartOffset is the log start offset after the command.
	StartOffset int64
	// Err is nil or a *Error (OFFSET_OUT_OF_RANGE past the log end,
	// KAFKA_STORAGE_ERROR).
	Err error
}

// ExpireResult is what applying a CmdExpireProducers returns.
type ExpireResult struct {
	Removed   int // producers forgotten
	Producers int // producers still known
}

// ProduceResult is what applying a produce command returns through
// raft.ApplyFuture.Response.
type ProduceResult struct {
	// BaseOffset is the offset of the batch's first record: newly assigned,
	// or the original one for an exact retry. -1 when Err is set.
	BaseOffset int64
	// LogStartOffset is the log's first offset after the apply.
	LogStartOffset int64
	// Duplicate is true when the batch was an exact retry and nothing was
	// appended.
	Duplicate bool
	// LogAppendTime is the leader time stamped into the batch, or -1 when
	// the batch keeps its producer's timestamps.
	LogAppendTime int64
	// Err is nil or a *Error carrying the Kafka error code.
	Err error
}

// Error is a rejected produce command: a Kafka error and why.
type Error struct {
	Code   *kerr.Error // the Kafka error the producer receives
	Detail string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code.Message, e.Detail) }
func (e *Error) Unwrap() error { return e.Code }

// ErrClosed is returned by applies after Close, and by one that gave up a
// storage retry at Stop (its entry is applied at the next start). It wraps
// NOT_LEADER_OR_FOLLOWER: the client should find the partition elsewhere.
var ErrClosed = fmt.Errorf("fsm: closed: %w", kerr.NotLeaderForPartition)

// FSM is the partition state machine. It implements raft.BatchingFSM.
type FSM struct {
	dir     string
	fs      vfs.FS
	files   *vfs.FileCache // Config.Files or a cache of its own
	log     Log
	logger  *slog.Logger
	obs     Observer // Config.Observer, or nil
	trimmed func()   // Config.Trimmed, or nil
	limit   int      // producer table bound (Config.MaxProducers resolved)

	// Owned by the FSM goroutine (ApplyBatch, Apply, Snapshot, Restore) and
	// by New and Close, which raft never runs concurrently with it. The
	// goroutine changes table only under tableMu, so that ActiveProducers
	// may read it from others.
	tableMu     sync.RWMutex
	table       *producerstate.Table
	appliedTerm uint64
	journal     *journal
	closed      bool
	stopped     bool // a storage retry gave up at Stop: nothing more is applied

	stop       chan struct{}         // closed by Stop
	stopOnce   sync.Once             // guards close(stop)
	storageErr atomic.Pointer[error] // the failure a storage retry waits out, or nil

	applied atomic.Uint64 // last applied Raft index; written by the FSM goroutine
	hw      atomic.Int64  // high watermark: the log end after the last apply
	// lso is the last stable offset, aborted the aborted transactions
	// index (producerstate.Table.AbortedTxns), both published by the FSM
	// goroutine after each apply: aborted first, then lso, then hw, so
	// that a reader who loads them in the other order never sees a stable
	// range without its aborts.
	lso      atomic.Int64
	aborted  atomic.Pointer[[]producerstate.AbortedTxn]
	txnDirty bool // the table's aborted index changed since the last publish; FSM goroutine

	// cpMu serializes checkpoint writes (Persist runs beside the FSM
	// goroutine) and guards cpSlots, cpIndex and cpEnd (the index and log
	// end of the newest checkpoint), and restoring, set while Restore
	// rewrites the log (no checkpoint may be written then).
	cpMu      sync.Mutex
	cpIndex   uint64
	cpEnd     int64
	cpSlots   cpSlots // where the next checkpoint goes
	restoring bool

	// changed is fired when the high watermark moves.
	changed changes.Signal

	cleaner *cleaner // runs the cleanings CmdClean queues (clean.go)
}

var _ raft.BatchingFSM = (*FSM)(nil)

// New opens the FSM over log, recovering its applied state from cfg.Dir.
func New(cfg Config, log Log) (*FSM, error) {
	if cfg.Dir == "" {
		return nil, errors.New("fsm: Config.Dir is empty")
	}
	fsys := vfs.Or(cfg.FS)
	if err := vfs.MkdirAllSync(fsys, cfg.Dir, vfs.DirMode); err != nil {
		return nil, fmt.Errorf("fsm: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &FSM{dir: cfg.Dir, fs: fsys, files: cfg.Files, log: log, logger: logger, obs: cfg.Observer, trimmed: cfg.Trimmed,
		limit: cfg.MaxProducers, stop: make(chan struct{})}
	if f.files == nil {
		f.files = vfs.NewFileCache(0)
	}
	if f.limit == 0 {
		f.limit = DefaultMaxProducers
	}
	if err := f.recover(cfg.Window); err != nil {
		return nil, err
	}
	f.table.SetLimit(f.limit)
	f.publish()
	f.cleaner = newCleaner(logger, f.stop, cfg.CleanSlots, fsys, cfg.Dir, f.log.EndOffset())
	return f, nil
}

// Apply implements raft.FSM.
func (f *FSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch implements raft.BatchingFSM. Entries at or below the applied
// index (replayed after a restart) are skipped and answered with nil.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	before := f.log.EndOffset()
	applied := f.applied.Load()
	advanced := false
	f.tableMu.Lock()
	for i, l := range logs {
		if l.Index <= applied {
			continue
		}
		if l.Type == raft.LogCommand {
			out[i] = f.applyCommand(l)
		}
		if f.stopped {
			// Not applied: the applied index stays below it, so the next
			// start replays it.
			out[i] = &ProduceResult{BaseOffset: -1, LogAppendTime: -1, Err: ErrClosed}
			continue
		}
		applied, f.appliedTerm, advanced = l.Index, l.Term, true
	}
	f.tableMu.Unlock()
	if !advanced {
		return out
	}
	f.applied.Store(applied)
	if !f.closed {
		point := journalRecord{index: applied, term: f.appliedTerm, end: f.log.EndOffset()}
		if p, ok := f.cleaner.pendingBefore(); ok {
			point = p // a crash must replay the cleaning's command (clean.go)
		}
		if err := f.journal.append(point.index, point.term, point.end); err != nil {
			// The journal only shortens replay: an older point is safe.
			f.logger.Warn("applied-index journal append failed; a restart replays more", "err", err)
		}
	}
	if end := f.log.EndOffset(); end != before || f.txnDirty {
		if f.txnDirty {
			f.publishAborted()
		}
		f.publishOffsets()
		f.notify()
	}
	return out
}

func (f *FSM) applyCommand(l *raft.Log) any {
	if f.closed || f.stopped {
		return &ProduceResult{BaseOffset: -1, Err: ErrClosed}
	}
	t, body, err := DecodeCommand(l.Data)
	if err != nil {
		return &ProduceResult{BaseOffset: -1, Err: &Error{Code: kerr.CorruptMessage, Detail: err.Error()}}
	}
	switch t {
	case CmdNoop:
		return nil
	case CmdProduce:
		return f.applyProduce(body, l.Term, -1, false)
	case CmdProduceAt:
		now, flags := int64(binary.BigEndian.Uint64(body)), body[8]
		if flags&FlagLogAppendTime == 0 {
			now = -1
		}
		return f.applyProduce(body[9:], l.Term, now, flags&FlagCoordinator != 0)
	case CmdTrim:
		return f.applyTrim(int64(binary.BigEndian.Uint64(body)), l.Index, l.Term)
	case CmdExpireProducers:
		return f.applyExpire(int64(binary.BigEndian.Uint64(body)), int64(binary.BigEndian.Uint64(body[8:])), l.Index, l.Term)
	case CmdEndTxn:
		return f.applyEndTxn(decodeEndTxn(body), l.Term)
	case CmdClean:
		return f.applyClean(body, l.Index)
	}
	panic("unreachable: DecodeCommand accepted " + t.String())
}

// Backoff of storage retries.
const (
	retryMin = time.Millisecond
	retryMax = time.Second
)

// retry runs op, a storage write of the current entry, until it succeeds
// or Stop is called (then it returns ErrClosed and sets f.stopped). An
// entry is never skipped: skipping one would make this replica differ from
// the others. Meanwhile StorageErr reports the failure. op must leave the
// state as it found it when it fails (the log undoes a failed append).
func (f *FSM) retry(what string, op func() error) error {
	err := op()
	if err == nil {
		return nil
	}
	f.setStorageErr(err)
	f.logger.Error("storage failure; retrying, produce is refused meanwhile", "op", what, "err", err)
	for wait := retryMin; ; wait = min(2*wait, retryMax) {
		t := time.NewTimer(wait)
		select {
		case <-f.stop: // shutting down: the entry stays unapplied
			t.Stop()
			f.stopped = true
			return ErrClosed
		case <-t.C:
		}
		if err := op(); err != nil {
			f.setStorageErr(err)
			continue
		}
		f.storageErr.Store(nil)
		f.logger.Info("storage recovered", "op", what)
		return nil
	}
}

// setStorageErr publishes err; each call stores its own copy, as readers
// dereference the pointer.
func (f *FSM) setStorageErr(err error) { f.storageErr.Store(&err) }

// StorageErr returns the storage failure the FSM is waiting out, or nil.
// While it is set the FSM applies nothing; the replica refuses produce
// with KAFKA_STORAGE_ERROR. Safe from any goroutine.
func (f *FSM) StorageErr() error {
	if p := f.storageErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Stop makes a storage retry give up, leaving its entry and every later
// one unapplied (the next start replays them). Call it before
// raft.Shutdown, which waits for the FSM goroutine. Safe from any
// goroutine, more than once.
func (f *FSM) Stop() { f.stopOnce.Do(func() { close(f.stop) }) }

// Close checkpoints the applied state so that a restart replays nothing.
// Call it after raft has shut down; it does not close the log.
func (f *FSM) Close() error { return f.close(true) }

// Discard is Close without the checkpoint, for an FSM whose directory is
// removed next: its journal is closed and nothing is synced.
func (f *FSM) Discard() error { return f.close(false) }

func (f *FSM) close(durable bool) error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.Stop() // a cleaning retrying a failed write gives up
	var err error
	switch {
	case durable:
		err = f.checkpoint(checkpoint{ // waits for the cleanings first
			index: f.applied.Load(), term: f.appliedTerm,
			start: f.log.StartOffset(), end: f.log.EndOffset(),
			table: f.table.AppendEncode(nil),
		})
		if errors.Is(err, errRestoring) || errors.Is(err, errCleaningAbandoned) {
			err = nil // the next start restores raft's snapshot, or replays the cleaning, again
		}
	case f.cleaner != nil:
		_ = f.cleaner.wait() // a cleaning, given up at Stop, ends before the log closes
	}
	if jerr := f.journal.close(); err == nil {
		err = jerr
	}
	f.notify()
	return err
}

// applyTrim moves the log start offset up to offset, the same on every
// replica. The new start is made durable before any segment goes: the log
// is synced and a checkpoint at this entry records the start, so that
// recovery never finds data missing below a checkpoint that still claims
// it, and re-applies the start (recover) if the deletion did not finish.
func (f *FSM) applyTrim(offset int64, index, term uint64) *TrimResult {
	res := &TrimResult{StartOffset: f.log.StartOffset()}
	switch {
	case offset > f.log.EndOffset():
		res.Err = &Error{Code: kerr.OffsetOutOfRange,
			Detail: fmt.Sprintf("offset %d is past the high watermark %d", offset, f.log.EndOffset())}
		return res
	case offset <= res.StartOffset:
		return res
	}
	// A cleaning queued before this trim is done first: both in Raft order.
	_ = f.cleaner.wait() // one given up (at Stop) makes the checkpoint below refuse
	// The aborted transactions wholly below the new start go with it.
	table := f.table.Clone()
	table.TrimAborted(offset)
	cp := checkpoint{index: index, term: term, start: offset, end: f.log.EndOffset(), table: table.AppendEncode(nil)}
	if err := f.retry("checkpoint before trim", func() error { return f.checkpoint(cp) }); err != nil {
		res.Err = err
		return res
	}
	f.table = table
	if err := f.retry("trim", func() error { return f.log.AdvanceStart(offset) }); err != nil {
		res.Err = err
		return res
	}
	res.StartOffset = offset
	f.publish()
	f.notify()
	if f.trimmed != nil {
		f.trimmed()
	}
	return res
}

// applyExpire forgets the producers idle beyond ttl as of now. A removal is
// made durable at once in a checkpoint at this entry: recovery rebuilds the
// table from the checkpoint and the stored batch headers, which cannot
// replay it, and resumes past this entry when the journal allows.
func (f *FSM) applyExpire(now, ttl int64, index, term uint64) *ExpireResult {
	table := f.table.Clone()
	removed := table.Expire(now, ttl)
	if removed > 0 {
		cp := checkpoint{index: index, term: term, start: f.log.StartOffset(), end: f.log.EndOffset(),
			table: table.AppendEncode(nil)}
		if err := f.retry("checkpoint after producer expiry", func() error { return f.checkpoint(cp) }); err != nil {
			return &ExpireResult{Producers: f.table.Len()} // not applied: f.stopped is set
		}
		f.table = table
	}
	return &ExpireResult{Removed: removed, Producers: f.table.Len()}
}
