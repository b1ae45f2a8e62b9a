package partition

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/multiraft"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/producerstate"
)

// ReplicaConfig opens one partition replica.
type ReplicaConfig struct {
	// Group is the replica's Raft group. Its Dir also holds the replica's
	// log/ and fsm/; OpenReplica supplies its FSM.
	Group multiraft.GroupSpec
	Log   seglog.Options
	// ProducerWindow is the number of batches remembered per producer.
	ProducerWindow int
	// MaxProducers bounds the producer table (fsm.Config.MaxProducers).
	MaxProducers int
	// Records, if set, receives the log's records (see RecordSink).
	Records RecordSink
	// Admit, if set, is asked before a client's batch of n bytes is
	// proposed (Propose, ProposeLogAppendTime); an error refuses it, and
	// Wait answers KAFKA_STORAGE_ERROR with its text. It is how a node
	// keeps its disk's reserve: trims, markers and coordinator writes
	// are never refused by it.
	Admit func(n int) error
	// SnapshotRoom, if set, is asked before each write of a snapshot past
	// its first MiB (one a follower installs is the partition's whole
	// log); an error fails the snapshot. It is how a follower keeps its
	// disk's reserve: the leader tries again later.
	SnapshotRoom func(n int) error
	// CleanSlots bounds the node's cleanings at once (fsm.Config.CleanSlots).
	CleanSlots chan struct{}
	Logger     *slog.Logger
}

// Replica is this node's copy of one partition: its Raft group, its FSM and
// its log. Produce goes through Raft on the leader; reads come from the log,
// which holds only applied, hence committed, batches.
type Replica struct {
	log    *seglog.Log
	fsm    *fsm.FSM
	group  *multiraft.Group
	admit  func(n int) error // ReplicaConfig.Admit, or nil
	logger *slog.Logger
	// settled is the last term in which this replica settled as leader
	// (Settle).
	settled atomic.Uint64

	// The snapshotter goroutine (replica_retain.go): the FSM kicks it
	// after a trim; Close closes snapStop and waits for snapDone.
	snapKick chan struct{}
	snapStop chan struct{}
	snapDone chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// OpenReplica opens the log and the FSM (recovering both) and starts the
// replica's Raft group on h.
func OpenReplica(h *multiraft.Host, cfg ReplicaConfig) (*Replica, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = logging.Discard()
	}
	lopts := cfg.Log
	if lopts.Logger == nil {
		lopts.Logger = logger
	}
	dir := cfg.Group.Dir
	l, err := seglog.Open(filepath.Join(dir, "log"), lopts)
	if err != nil {
		return nil, err
	}
	kick := make(chan struct{}, 1)
	fcfg := fsm.Config{Dir: filepath.Join(dir, "fsm"), Window: cfg.ProducerWindow, Logger: logger,
		FS: lopts.FS, Files: lopts.Files, MaxProducers: cfg.MaxProducers, CleanSlots: cfg.CleanSlots, Trimmed: func() {
			select {
			case kick <- struct{}{}:
			default: // a snapshot is pending already
			}
		}}
	var feeder *recordFeeder
	if cfg.Records != nil {
		feeder = &recordFeeder{sink: cfg.Records, log: l, logger: logger}
		fcfg.Observer = feeder
	}
	f, err := fsm.New(fcfg, l)
	if err != nil {
		l.Close()
		return nil, err
	}
	if feeder != nil {
		if err := feeder.rebuild(); err != nil {
			f.Close()
			l.Close()
			return nil, err
		}
	}
	spec := cfg.Group
	spec.FSM = durableFSM{FSM: f, logger: logger, room: cfg.SnapshotRoom}
	if spec.Logger == nil {
		spec.Logger = logger
	}
	g, err := h.Open(spec)
	if err != nil {
		f.Close()
		l.Close()
		return nil, err
	}
	r := &Replica{log: l, fsm: f, group: g, admit: cfg.Admit, logger: logger,
		snapKick: kick, snapStop: make(chan struct{}), snapDone: make(chan struct{})}
	go r.snapshotter()
	return r, nil
}

// durableFSM tells the group that the FSM keeps its state on disk, and
// how to reconcile it with raft's snapshots.
type durableFSM struct {
	*fsm.FSM
	logger *slog.Logger
	room   func(n int) error // ReplicaConfig.SnapshotRoom, or nil
}

var _ multiraft.DurableFSM = durableFSM{}

func (d durableFSM) WrapSnapshots(s raft.SnapshotStore) raft.SnapshotStore {
	return &snapshotStore{SnapshotStore: s, fsm: d.FSM, room: d.room}
}

func (d durableFSM) BeforeStart(s raft.SnapshotStore) error {
	return restoreIfBehind(s, d.FSM, d.logger)
}

// Errors a produce can end with besides the FSM's own (*fsm.Error). Each
// wraps the Kafka error a client should see.
var (
	// ErrNotLeader: this node is not the partition's leader.
	ErrNotLeader = fmt.Errorf("partition: not the leader: %w", kerr.NotLeaderForPartition)
	// ErrMaybeCommitted: leadership was lost while the proposal was in
	// flight; it may or may not be committed. An idempotent producer's
	// retry resolves it.
	ErrMaybeCommitted = fmt.Errorf("partition: leadership lost, outcome unknown: %w", kerr.NotLeaderForPartition)
	// ErrTimeout: the proposal could not be queued in time.
	ErrTimeout = fmt.Errorf("partition: proposal timed out: %w", kerr.RequestTimedOut)
	// ErrShutdown: the replica is shutting down.
	ErrShutdown = fmt.Errorf("partition: replica shut down: %w", kerr.NotLeaderForPartition)
	// ErrStorage: this replica's Raft log store failed to write the
	// proposal (its disk is full); an idempotent producer's retry
	// resolves whether another replica stored it.
	ErrStorage = fmt.Errorf("partition: raft log store failed: %w", kerr.KafkaStorageError)
)

// Proposal is a produce command on its way through Raft.
type Proposal struct {
	p      multiraft.Proposal
	refuse error // set instead of p: the storage failure that refused it
}

// Propose queues batch (already CRC-checked by the caller) for replication.
// Proposals are ordered in call order. timeout bounds only the queueing;
// Wait blocks until the entry is applied or the proposal fails. While this
// replica's storage fails (fsm.FSM.StorageErr, or its Raft log store's:
// multiraft.Group.StorageErr) or ReplicaConfig.Admit refuses the batch,
// nothing is proposed: Wait answers KAFKA_STORAGE_ERROR at once.
func (r *Replica) Propose(batch []byte, timeout time.Duration) *Proposal {
	if err := r.refuseGrowth(len(batch)); err != nil {
		return &Proposal{refuse: err}
	}
	return &Proposal{p: r.group.Propose(fsm.EncodeProduce(batch), timeout)}
}

// refuseGrowth is why a client's batch of n bytes may not be proposed
// now, or nil: a storage failure, or no room on the disk.
func (r *Replica) refuseGrowth(n int) error {
	if err := r.fsm.StorageErr(); err != nil {
		return err
	}
	if err := r.group.StorageErr(); err != nil {
		return err
	}
	if r.admit != nil {
		return r.admit(n)
	}
	return nil
}

// ProposeLogAppendTime is Propose for a topic whose timestamps are the
// broker's (message.timestamp.type=LogAppendTime): the entry carries this
// leader's clock, which every replica stamps into the batch.
func (r *Replica) ProposeLogAppendTime(batch []byte, timeout time.Duration) *Proposal {
	if err := r.refuseGrowth(len(batch)); err != nil {
		return &Proposal{refuse: err}
	}
	cmd := fsm.EncodeProduceAt(batch, time.Now().UnixMilli(), fsm.FlagLogAppendTime)
	return &Proposal{p: r.group.Propose(cmd, timeout)}
}

// ProposeCoordinator is Propose for a batch a coordinator writes for a
// producer (transactional offset commits): its sequence is -1 and only its
// epoch is checked (fsm.FlagCoordinator).
func (r *Replica) ProposeCoordinator(batch []byte, timeout time.Duration) *Proposal {
	if err := r.fsm.StorageErr(); err != nil {
		return &Proposal{refuse: err}
	}
	cmd := fsm.EncodeProduceAt(batch, time.Now().UnixMilli(), fsm.FlagCoordinator)
	return &Proposal{p: r.group.Propose(cmd, timeout)}
}

// TxnMarker is a transaction marker to write (ProposeEndTxn).
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool // COMMIT, else ABORT
	V2               bool // a marker of transactions v2 (fsm.EndTxn.V2)
}

// ProposeEndTxn queues a transaction marker (for the transaction
// coordinator's WriteTxnMarkers), stamped with this leader's clock, as
// Propose queues a batch. The result's BaseOffset is the marker's offset;
// the FSM refuses a stale producer or coordinator epoch in its Err.
func (r *Replica) ProposeEndTxn(m TxnMarker, timeout time.Duration) *Proposal {
	if err := r.fsm.StorageErr(); err != nil {
		return &Proposal{refuse: err}
	}
	cmd := fsm.EncodeEndTxn(fsm.EndTxn{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
		CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Commit, V2: m.V2, LeaderTime: time.Now().UnixMilli()})
	return &Proposal{p: r.group.Propose(cmd, timeout)}
}

// Wait returns the outcome: the FSM's result, whose Err carries a Kafka
// error for rejected batches, or one of this package's errors.
func (p *Proposal) Wait() (*fsm.ProduceResult, error) {
	if p.refuse != nil {
		return &fsm.ProduceResult{BaseOffset: -1, LogAppendTime: -1,
			Err: &fsm.Error{Code: kerr.KafkaStorageError, Detail: p.refuse.Error()}}, nil
	}
	return waitFor[*fsm.ProduceResult](p.p)
}

// waitFor waits for a proposal and returns the FSM's result, of type T,
// or one of this package's errors.
func waitFor[T any](p multiraft.Proposal) (T, error) {
	var zero T
	_, resp, err := p.Wait()
	switch {
	case err == nil:
	case errors.Is(err, multiraft.ErrNotLeader):
		return zero, ErrNotLeader
	case errors.Is(err, multiraft.ErrMaybeCommitted):
		return zero, ErrMaybeCommitted
	case errors.Is(err, multiraft.ErrEnqueueTimeout):
		return zero, ErrTimeout
	case errors.Is(err, multiraft.ErrGroupClosed):
		return zero, ErrShutdown
	case errors.Is(err, multiraft.ErrStorage):
		return zero, fmt.Errorf("%w: %w", ErrStorage, err)
	default:
		return zero, fmt.Errorf("partition: %w", err)
	}
	res, ok := resp.(T)
	if !ok {
		return zero, fmt.Errorf("partition: unexpected apply result %T", resp)
	}
	return res, nil
}

// Produce proposes batch and waits for its outcome. ctx bounds the wait
// for a queue slot only (see Propose).
func (r *Replica) Produce(ctx context.Context, batch []byte) (*fsm.ProduceResult, error) {
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	return r.Propose(batch, timeout).Wait()
}

// Read returns whole committed batches from offset, up to maxBytes but at
// least one batch.
func (r *Replica) Read(offset int64, maxBytes int) ([]byte, error) {
	return r.log.Read(offset, maxBytes)
}

// HighWatermark is the end of the committed, applied log.
func (r *Replica) HighWatermark() int64 { return r.fsm.HighWatermark() }

// LastStableOffset is the offset below which every transaction has ended
// (fsm.FSM.LastStableOffset).
func (r *Replica) LastStableOffset() int64 { return r.fsm.LastStableOffset() }

// AbortedTxns returns the aborted transactions overlapping [from, to)
// (fsm.FSM.AbortedTxns).
func (r *Replica) AbortedTxns(from, to int64) []producerstate.AbortedTxn {
	return r.fsm.AbortedTxns(from, to)
}

// LogStartOffset is the first offset held.
func (r *Replica) LogStartOffset() int64 { return r.log.StartOffset() }

// LogSize is the size of the replica's log segments in bytes.
func (r *Replica) LogSize() int64 { return r.log.Size() }

// Changed is closed the next time the high watermark moves.
func (r *Replica) Changed() <-chan struct{} { return r.fsm.Changed() }

// WatchChanged calls wake once, when the channel seen (from Changed) is
// closed, or at once if it already is (fsm.FSM.WatchChanged).
func (r *Replica) WatchChanged(seen <-chan struct{}, wake func()) (stop func()) {
	return r.fsm.WatchChanged(seen, wake)
}

// OffsetForTimestamp finds the first batch whose max timestamp is >= ts.
func (r *Replica) OffsetForTimestamp(ts int64) (int64, int64, bool) {
	return r.log.OffsetForTimestamp(ts)
}

// IsLeader reports whether this node leads the partition now.
func (r *Replica) IsLeader() bool { return r.group.IsLeader() }

// Leader returns the leader's node id as this replica knows it; ok is
// false when it knows none.
func (r *Replica) Leader() (node int32, ok bool) {
	node, _, ok = r.group.Leader()
	return node, ok
}

// LeaderAndEpoch returns the leader with the term it leads in, read
// together (multiraft.Group.LeaderEpoch); ok is false when no leader of
// the current term is known.
func (r *Replica) LeaderAndEpoch() (node, epoch int32, ok bool) {
	n, e, ok := r.group.LeaderEpoch()
	return n, int32(e), ok
}

// LeaderEpoch is the current Raft term, which serves as Kafka's leader
// epoch.
func (r *Replica) LeaderEpoch() int32 { return int32(r.group.Epoch()) }

// Settle waits, once per term, until this leader has applied every entry
// of its predecessors' terms (multiraft.Group.Settle): until then its log
// may be shorter than what earlier leaders acknowledged. timeout bounds
// the wait when ctx has no deadline.
func (r *Replica) Settle(ctx context.Context, timeout time.Duration) error {
	term := r.group.Epoch()
	if r.settled.Load() >= term {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := r.group.Settle(ctx); err != nil {
		return err
	}
	r.settled.Store(term)
	return nil
}

// EpochEndOffset answers Kafka's OffsetForLeaderEpoch from the log's epoch
// index (Log.EpochEndOffset).
func (r *Replica) EpochEndOffset(epoch int32) (floor int32, end int64, err error) {
	return r.log.EpochEndOffset(epoch)
}

// Group is the replica's Raft group.
func (r *Replica) Group() *multiraft.Group { return r.group }

// StopStorageRetries makes an apply that waits out a storage failure give
// up (its entry and the later ones apply at the next start), so that the
// requests waiting on it end. Healthy replicas are not affected. A node
// calls it first when it shuts down.
func (r *Replica) StopStorageRetries() { r.fsm.Stop() }

// Close stops Raft, then checkpoints the FSM and closes the log. It is
// safe to call more than once.
func (r *Replica) Close() error { return r.close(r.fsm.Close, r.log.Close) }

// Discard is Close for a replica whose directory is removed next: nothing
// is made durable (no checkpoint, no sync of the log), so removing many
// replicas at once costs no fsyncs. A crash before the removal finishes
// leaves what a kill -9 would, which the next start recovers from.
func (r *Replica) Discard() error { return r.close(r.fsm.Discard, r.log.Discard) }

func (r *Replica) close(closeFSM, closeLog func() error) error {
	r.closeOnce.Do(func() {
		close(r.snapStop)
		<-r.snapDone
		r.fsm.Stop() // raft's shutdown waits for an apply retrying a failed write
		err := r.group.Close()
		if ferr := closeFSM(); err == nil {
			err = ferr
		}
		if lerr := closeLog(); err == nil {
			err = lerr
		}
		r.closeErr = err
	})
	return r.closeErr
}

// snapshotStore expands the FSM's reference snapshots into the full form
// when raft opens one (to send it to a follower or to restore it).
type snapshotStore struct {
	raft.SnapshotStore
	fsm  *fsm.FSM
	room func(n int) error // see roomSink; nil: none asked
}

func (s *snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	size, full, err := s.fsm.OpenSnapshot(rc)
	if err != nil {
		return nil, nil, err
	}
	m := *meta
	m.Size = size
	return &m, full, nil
}

// restoreIfBehind restores the FSM from raft's newest snapshot when the
// FSM's durable state is older: raft, told not to restore on start
// (NoSnapshotRestoreOnStart), would otherwise replay only the entries after
// that snapshot onto an FSM that lacks the ones before it. This is the case
// after a crash in the middle of installing a snapshot from the leader.
// The snapshot is read as stored: expanding the node's own reference
// snapshot would stream the log into itself.
func restoreIfBehind(snaps raft.SnapshotStore, f *fsm.FSM, logger *slog.Logger) error {
	if w, ok := snaps.(*snapshotStore); ok {
		snaps = w.SnapshotStore
	}
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 {
		return err
	}
	_, rc, err := snaps.Open(metas[0].ID)
	if err != nil {
		return fmt.Errorf("partition: open snapshot %s: %w", metas[0].ID, err)
	}
	applied := f.AppliedIndex()
	restored, err := f.RestoreIfBehind(rc)
	if err != nil {
		return fmt.Errorf("partition: restore snapshot %s: %w", metas[0].ID, err)
	}
	if restored {
		logger.Warn("replica state was behind its newest snapshot (crash during a snapshot install?); restored it",
			"applied", applied, "snapshot", f.AppliedIndex())
	}
	return nil
}
