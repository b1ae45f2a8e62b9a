package partition

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/raftgroup"
)

// ReplicaConfig opens one partition replica.
type ReplicaConfig struct {
	// Dir holds the replica: log/, fsm/, raft.db and snapshots/.
	Dir string
	// LocalID is this node's Raft server ID.
	LocalID raft.ServerID
	// Servers is the partition's replica set; every member bootstraps the
	// same list when it has no state yet.
	Servers   []raft.Server
	Transport raft.Transport
	Timing    raftgroup.Timing
	Log       LogOptions
	// ProducerWindow is the number of batches remembered per producer.
	ProducerWindow int
	// OnLeader, if set, is called from the replica's own goroutine each
	// time this node gains (true) or loses (false) the partition's
	// leadership, with the Raft term at that moment.
	OnLeader func(leader bool, term uint64)
	Logger   *slog.Logger
	// CampaignDelay, when positive, holds a brand-new group's replica back
	// from campaigning for at most this long, or until ReleaseCampaign
	// (see raftgroup.Config.CampaignDelay). Ignored when the replica has
	// Raft state.
	CampaignDelay time.Duration
}

// Replica is this node's copy of one partition: its Raft group, its FSM and
// its log. Produce goes through Raft on the leader; reads come from the log,
// which holds only applied, hence committed, batches.
type Replica struct {
	log    *Log
	fsm    *fsm.FSM
	group  *raftgroup.Group
	logger *slog.Logger

	notify chan bool     // raft's leadership notifications
	stop   chan struct{} // closed by Close to stop watch
	done   chan struct{} // closed when watch returns

	closeOnce sync.Once
	closeErr  error
}

// OpenReplica opens the log and the FSM (recovering both) and starts the
// replica's Raft group.
func OpenReplica(cfg ReplicaConfig) (*Replica, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = logging.Discard()
	}
	lopts := cfg.Log
	if lopts.Logger == nil {
		lopts.Logger = logger
	}
	l, err := OpenLog(filepath.Join(cfg.Dir, "log"), lopts)
	if err != nil {
		return nil, err
	}
	f, err := fsm.New(fsm.Config{Dir: filepath.Join(cfg.Dir, "fsm"), Window: cfg.ProducerWindow, Logger: logger}, l)
	if err != nil {
		l.Close()
		return nil, err
	}
	r := &Replica{
		log: l, fsm: f, logger: logger,
		notify: make(chan bool, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	g, err := raftgroup.Open(raftgroup.Config{
		Dir:                      cfg.Dir,
		LocalID:                  cfg.LocalID,
		Servers:                  cfg.Servers,
		Bootstrap:                true,
		Transport:                cfg.Transport,
		Timing:                   cfg.Timing,
		NoSnapshotRestoreOnStart: true,
		WrapSnapshots:            func(s raft.SnapshotStore) raft.SnapshotStore { return &snapshotStore{SnapshotStore: s, fsm: f} },
		BeforeStart:              func(s raft.SnapshotStore) error { return restoreIfBehind(s, f, logger) },
		NotifyCh:                 r.notify,
		Logger:                   logger,
		CampaignDelay:            cfg.CampaignDelay,
	}, f)
	if err != nil {
		f.Close()
		l.Close()
		return nil, err
	}
	r.group = g
	go r.watch(cfg.OnLeader)
	return r, nil
}

// watch forwards leadership changes. It is owned by the Replica and ends
// when Close closes stop.
func (r *Replica) watch(onLeader func(bool, uint64)) {
	defer close(r.done)
	for {
		select {
		case <-r.stop:
			return
		case leader := <-r.notify:
			if onLeader != nil {
				onLeader(leader, r.group.Raft.CurrentTerm())
			}
		}
	}
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
)

// Proposal is a produce command on its way through Raft.
type Proposal struct {
	future raft.ApplyFuture
	err    error
}

// Propose queues batch (already CRC-checked by the caller) for replication.
// Proposals are ordered in call order. timeout bounds only the queueing;
// Wait blocks until the entry is applied or the proposal fails.
func (r *Replica) Propose(batch []byte, timeout time.Duration) *Proposal {
	if r.group.Raft.State() != raft.Leader {
		return &Proposal{err: ErrNotLeader}
	}
	return &Proposal{future: r.group.Raft.Apply(fsm.EncodeProduce(batch), timeout)}
}

// Wait returns the outcome: the FSM's result, whose Err carries a Kafka
// error for rejected batches, or one of this package's errors.
func (p *Proposal) Wait() (*fsm.ProduceResult, error) {
	if p.err != nil {
		return nil, p.err
	}
	if err := p.future.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader):
			return nil, ErrNotLeader
		case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return nil, ErrMaybeCommitted
		case errors.Is(err, raft.ErrEnqueueTimeout):
			return nil, ErrTimeout
		case errors.Is(err, raft.ErrRaftShutdown):
			return nil, ErrShutdown
		}
		return nil, fmt.Errorf("partition: %w", err)
	}
	res, ok := p.future.Response().(*fsm.ProduceResult)
	if !ok {
		return nil, fmt.Errorf("partition: unexpected apply result %T", p.future.Response())
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

// LogStartOffset is the first offset held.
func (r *Replica) LogStartOffset() int64 { return r.log.StartOffset() }

// Changed is closed the next time the high watermark moves.
func (r *Replica) Changed() <-chan struct{} { return r.fsm.Changed() }

// OffsetForTimestamp finds the first batch whose max timestamp is >= ts.
func (r *Replica) OffsetForTimestamp(ts int64) (int64, int64, bool) {
	return r.log.OffsetForTimestamp(ts)
}

// IsLeader reports whether this node leads the partition now.
func (r *Replica) IsLeader() bool { return r.group.Raft.State() == raft.Leader }

// Leader returns the current leader's server ID, or "" when unknown.
func (r *Replica) Leader() raft.ServerID {
	_, id := r.group.Raft.LeaderWithID()
	return id
}

// LeaderEpoch is the current Raft term, which serves as Kafka's leader
// epoch.
func (r *Replica) LeaderEpoch() int32 { return int32(r.group.Raft.CurrentTerm()) }

// ReleaseCampaign ends a new replica's campaign hold after d (at once if
// d <= 0); see raftgroup.Group.ReleaseCampaign. No-op when not held.
func (r *Replica) ReleaseCampaign(d time.Duration) { r.group.ReleaseCampaign(d) }

// CampaignHeld reports whether the replica is still held back from
// campaigning (a new group's member before ReleaseCampaign or a leader).
func (r *Replica) CampaignHeld() bool { return r.group.Held() }

// Raft exposes the group, for tests and the node's administration.
func (r *Replica) Raft() *raft.Raft { return r.group.Raft }

// TransferLeadership asks Raft to hand leadership to member to (at addr)
// and waits for the outcome or ctx; see raftgroup.Group.TransferLeadership.
func (r *Replica) TransferLeadership(ctx context.Context, to raft.ServerID, addr raft.ServerAddress) error {
	return r.group.TransferLeadership(ctx, to, addr)
}

// Close stops Raft, then checkpoints the FSM and closes the log. It is
// safe to call more than once.
func (r *Replica) Close() error {
	r.closeOnce.Do(func() {
		err := r.group.Close()
		close(r.stop)
		<-r.done
		if ferr := r.fsm.Close(); err == nil {
			err = ferr
		}
		if lerr := r.log.Close(); err == nil {
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
	fsm *fsm.FSM
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
func restoreIfBehind(snaps raft.SnapshotStore, f *fsm.FSM, logger *slog.Logger) error {
	metas, err := snaps.List()
	if err != nil {
		return fmt.Errorf("partition: list snapshots: %w", err)
	}
	if len(metas) == 0 || !f.NeedsRestore(metas[0].Index) {
		return nil
	}
	logger.Warn("replica state is behind its newest snapshot (crash during a snapshot install?); restoring it",
		"applied", f.AppliedIndex(), "snapshot", metas[0].Index)
	_, rc, err := snaps.Open(metas[0].ID)
	if err != nil {
		return fmt.Errorf("partition: open snapshot %s: %w", metas[0].ID, err)
	}
	if err := f.Restore(rc); err != nil {
		return fmt.Errorf("partition: restore snapshot %s: %w", metas[0].ID, err)
	}
	return nil
}
