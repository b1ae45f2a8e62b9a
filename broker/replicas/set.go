package replicas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/multiraft"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// Config is what the Set needs of the node's configuration.
type Config struct {
	NodeID int32
	// Dir is the partitions directory: one directory per replica
	// (DirName), holding its replica.json, Raft state and log.
	Dir string
	// Raft is the partition groups' Raft timing; LogStore the Raft log
	// store of new groups.
	Raft     multiraft.Timing
	LogStore multiraft.LogStore
	// SegmentBytes is the default log segment size; FS holds the logs and
	// FSM state; MaxOpenFiles bounds the segment and journal files held
	// open across all replicas.
	SegmentBytes int64
	// CacheKeepBytes is seglog.Options.CacheKeepBytes of every log.
	CacheKeepBytes int64
	FS             vfs.FS
	MaxOpenFiles   int
	// ProducerWindow is the batches remembered per producer;
	// MaxProducers bounds each partition's producer table.
	ProducerWindow int
	MaxProducers   int
	// CleanerThreads bounds the cleanings (cleanup.policy=compact) running
	// at once across the node's replicas (Kafka's log.cleaner.threads).
	CleanerThreads int
	// CleanerMapBytes bounds one cleaning's map of keys (its share of
	// Kafka's log.cleaner.dedupe.buffer.size); a log with more keys in its
	// dirty part is cleaned in several passes.
	CleanerMapBytes int64
	Tuning          Tuning
}

// Tuning is the Set's intervals and limits; every field must be set (the
// broker's Tuning holds their defaults).
type Tuning struct {
	// ReconcileRetry is how often replicas that failed to open are tried
	// again without a metadata change.
	ReconcileRetry time.Duration
	// OpenParallelism is how many replicas open at once.
	OpenParallelism int
	// ReassignInterval is how often a leader looks at the moves without a
	// metadata change; ReassignStep bounds one membership change.
	ReassignInterval, ReassignStep time.Duration
	// Proposal bounds a leader's retention or producer-expiry proposal.
	Proposal time.Duration
}

// Metadata is what the Set needs of the node's member of the metadata
// group (*controller.Controller).
type Metadata interface {
	State() *metadata.Snapshot
	Watch() <-chan struct{}
	// CaughtUp reports whether the local copy has caught up with the
	// metadata leader's.
	CaughtUp() bool
	Propose(ctx context.Context, cmd metadata.Command) (controller.Reply, error)
	ReportLeader(l controller.Leadership, term uint64)
}

var _ Metadata = (*controller.Controller)(nil)

// Deps are the parts of the node the Set uses.
type Deps[E any] struct {
	// Host is the node's Raft port, on which the partition groups run.
	Host *multiraft.Host
	Meta Metadata
	// TopicConfig resolves a topic's configs.
	TopicConfig func(topic string) topicconfig.Config
	// Resolve maps a node id to its Raft address (the node's address book).
	Resolve func(id int32) (string, bool)
	// Attach runs as a replica opens, before its Raft group and log: it
	// fills the replica's Extra and returns the sink of its applied
	// records (nil: none). Partition is nil then.
	Attach func(r *Replica[E]) partition.RecordSink
	// OnLeader runs on the replica's goroutine when this node gains or
	// loses its leadership, before a gain is reported to the metadata.
	OnLeader func(r *Replica[E], leader bool, term uint64)
	// Admit is the replica's admission of a client's batch
	// (partition.ReplicaConfig.Admit); SnapshotRoom its check for room for
	// a snapshot.
	Admit        func(r *Replica[E]) func(size int) error
	SnapshotRoom func(size int) error
	// OnFsync observes each log fsync (metrics).
	OnFsync func(time.Duration)
	Logger  *slog.Logger
}

// Set owns this node's partition replicas.
type Set[E any] struct {
	cfg    Config
	deps   Deps[E]
	logger *slog.Logger

	ctx    context.Context // ends the loops and the proposals; cancelled by New's context or Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the loops Start launches

	// mu guards reps, removing and closed. Opening a replica (disk and
	// Raft start-up) happens outside the lock, on the reconcile goroutine
	// only (and on the caller's, in OpenFromDisk, before Start).
	mu   sync.RWMutex
	reps map[tp]*Replica[E]
	// removing holds the directory names (DirName) of the replicas taken
	// out of reps whose removal is queued or under way, with their topic
	// ids; removals is the queue, in order (removerLoop).
	removing map[string]metadata.TopicID
	removals []removal[E]
	closed   bool

	// removeKick wakes removerLoop; reconcileKick wakes reconcileLoop when
	// a removal ends (a replica may wait for its directory). Capacity 1.
	removeKick, reconcileKick chan struct{}

	// files holds the replicas' segment and journal files open, at most
	// Config.MaxOpenFiles of them.
	files *vfs.FileCache
	// cleanSlots bounds the replicas' cleanings at once (CleanerThreads).
	cleanSlots chan struct{}
}

// New makes the Set; it starts nothing (OpenFromDisk, Start).
func New[E any](ctx context.Context, cfg Config, deps Deps[E]) *Set[E] {
	s := &Set[E]{cfg: cfg, deps: deps, logger: deps.Logger, reps: map[tp]*Replica[E]{},
		removing: map[string]metadata.TopicID{}, removeKick: make(chan struct{}, 1), reconcileKick: make(chan struct{}, 1),
		files: vfs.NewFileCache(cfg.MaxOpenFiles), cleanSlots: make(chan struct{}, max(cfg.CleanerThreads, 1))}
	s.ctx, s.cancel = context.WithCancel(ctx)
	return s
}

// Start launches the reconcile, reassignment and removal loops, which run
// until New's context ends or Close.
func (s *Set[E]) Start() {
	s.wg.Add(3)
	go s.reconcileLoop()
	go s.reassignLoop()
	go s.removerLoop()
}

// Get returns the open replica of topic/p.
func (s *Set[E]) Get(topic string, p int32) (*Replica[E], bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.reps[tp{topic, p}]
	return r, ok
}

// All returns the open replicas, in no order.
func (s *Set[E]) All() []*Replica[E] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Replica[E], 0, len(s.reps))
	for _, r := range s.reps {
		out = append(out, r)
	}
	return out
}

// Led returns the open replicas this node leads.
func (s *Set[E]) Led() []*Replica[E] {
	var out []*Replica[E]
	for _, r := range s.All() {
		if r.rep.IsLeader() {
			out = append(out, r)
		}
	}
	return out
}

// dir is the directory of a partition's replica.
func (s *Set[E]) dir(topic string, p int32) string {
	return filepath.Join(s.cfg.Dir, DirName(topic, p))
}

// fs is the file system of the replicas' logs and replica.json files.
func (s *Set[E]) fs() vfs.FS { return vfs.Or(s.cfg.FS) }

// OpenFromDisk starts every replica whose directory holds a replica.json.
func (s *Set[E]) OpenFromDisk() error {
	entries, err := s.fs().ReadDir(s.cfg.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := vfs.ReadFile(s.fs(), filepath.Join(s.cfg.Dir, e.Name(), "replica.json"))
		if err != nil {
			s.logger.Warn("skipping partition directory without replica.json", "dir", e.Name(), "err", err)
			continue
		}
		var info Info
		if err := json.Unmarshal(b, &info); err != nil {
			return fmt.Errorf("broker: %s/replica.json: %w", e.Name(), err)
		}
		if _, err := s.open(info); err != nil {
			return err
		}
	}
	return nil
}

// open starts one replica and returns it (nil if it was open already). A
// brand-new group of more than one replica starts held back from
// campaigning until the batch it came with is released
// (multiraft.Host.ReleaseCampaigns).
func (s *Set[E]) open(info Info) (*Replica[E], error) {
	if _, ok := s.Get(info.Topic, info.Partition); ok || s.beingRemoved(info.Topic, info.Partition) {
		return nil, nil // open, or its directory is not free yet: the pass is incomplete and runs again
	}
	dir := s.dir(info.Topic, info.Partition)
	if err := writeInfo(s.fs(), dir, info); err != nil {
		return nil, err
	}
	// Raft's snapshots and marker are on the real disk (the same one
	// unless a test gives the logs their own FS).
	if err := os.MkdirAll(dir, vfs.DirMode); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	r := &Replica[E]{info: info, ready: make(chan struct{}), resolve: s.deps.TopicConfig,
		logger: s.logger.With("partition", DirName(info.Topic, info.Partition))}
	if id, err := metadata.ParseTopicID(info.TopicID); err == nil {
		r.id = id
	}
	sink := s.deps.Attach(r)
	rep, err := partition.OpenReplica(s.deps.Host, partition.ReplicaConfig{
		Group: multiraft.GroupSpec{
			Name:     groupName(info),
			Members:  info.Replicas,
			Join:     info.Join,
			Dir:      dir,
			Timing:   timingFor(info.Topic, s.cfg.Raft),
			LogStore: s.cfg.LogStore,
			Hold:     true,
			OnLeader: func(leader bool, term uint64) { s.onLeader(r, leader, term) },
		},
		Log:            seglog.Options{SegmentBytes: s.cfg.SegmentBytes, CacheKeepBytes: s.cfg.CacheKeepBytes, FS: s.cfg.FS, Files: s.files, OnFsync: s.deps.OnFsync},
		ProducerWindow: s.cfg.ProducerWindow,
		MaxProducers:   s.cfg.MaxProducers,
		Records:        sink,
		Admit:          s.deps.Admit(r),
		SnapshotRoom:   s.deps.SnapshotRoom,
		CleanSlots:     s.cleanSlots,
		Logger:         r.logger,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: open replica %s-%d: %w", info.Topic, info.Partition, err)
	}
	r.rep = rep
	r.refreshConfig()
	close(r.ready)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		rep.Close()
		return nil, nil
	}
	s.reps[tp{info.Topic, info.Partition}] = r
	s.mu.Unlock()
	s.logger.Debug("replica started", "topic", info.Topic, "partition", info.Partition, "replicas", info.Replicas)
	return r, nil
}

// onLeader runs on the replica's goroutine when this node gains or loses
// leadership: a new leader reports itself to the metadata group.
func (s *Set[E]) onLeader(r *Replica[E], leader bool, term uint64) {
	s.deps.OnLeader(r, leader, term)
	if !leader {
		return
	}
	s.logger.Debug("became partition leader", "topic", r.info.Topic, "partition", r.info.Partition, "epoch", term)
	s.deps.Meta.ReportLeader(r, term)
}

// Close stops the loops, closes every replica, in parallel, and waits for
// the loops to return.
func (s *Set[E]) Close() error {
	s.cancel()
	s.mu.Lock()
	s.closed = true
	reps := s.reps
	s.reps = map[tp]*Replica[E]{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, len(reps))
	for _, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- r.rep.Close()
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	s.wg.Wait()
	// The removals removerLoop left are closed here, their data kept: the
	// next start opens them from disk and removes them again.
	s.mu.Lock()
	left := s.removals
	s.removals = nil
	s.mu.Unlock()
	for _, q := range left {
		<-q.r.ready
		all = append(all, q.r.rep.Close())
	}
	return errors.Join(all...)
}
