package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/metrics"
	"github.com/minikafka/minikafka-go/multiraft"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/topicconfig"
	"github.com/minikafka/minikafka-go/txncoord"
)

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// replicaInfo is written next to each replica's data (replica.json) so
// that a restarting node can start its replicas before the metadata group
// is up.
type replicaInfo struct {
	Topic     string  `json:"topic"`
	TopicID   string  `json:"topic_id"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	// Join is set for a replica a reassignment added to a running group:
	// it must never bootstrap the group, even when reopened before it
	// received anything.
	Join bool `json:"join,omitempty"`
}

// localReplica is one open replica with what the node needs to know of it.
type localReplica struct {
	info  replicaInfo
	rep   *partition.Replica // set once, before ready is closed
	ready chan struct{}
	// id is info.TopicID parsed (zero if it does not parse).
	id metadata.TopicID
	// view is the materialised view of a __consumer_offsets replica's
	// records (nil for other topics), which its coordinator serves from.
	view *groupcoord.View
	// txnView is the materialised view of a __transaction_state
	// replica's records (nil for other topics).
	txnView *txncoord.View
	// cfg is the topic's resolved configs (retention.go), replaced when
	// the metadata changes; read by produce and retention.
	cfg atomic.Pointer[topicconfig.Config]
	// logger names the partition.
	logger *slog.Logger
	// txnVerified remembers, while this node leads, the transactions
	// verified to hold the partition (txnverified.go).
	txnVerified txnVerified

	// wcMu guards wc, and serialises SetWriteCaching calls so that the
	// group ends in the mode of the last config applied (writecaching.go).
	wcMu sync.Mutex
	wc   writeCaching

	// traffic counts the records produced to and fetched from the replica.
	traffic metrics.Traffic
}

// A localReplica's leaderships are reported by the controller.
var _ controller.Leadership = (*localReplica)(nil)

// TopicPartition names the replica's partition.
func (lr *localReplica) TopicPartition() (string, int32) { return lr.info.Topic, lr.info.Partition }

// Opened is closed once the replica is open (rep is set).
func (lr *localReplica) Opened() <-chan struct{} { return lr.ready }

// LeadsIn reports whether the replica leads in term; only once Opened.
func (lr *localReplica) LeadsIn(term uint64) bool {
	return lr.rep.IsLeader() && uint64(lr.rep.LeaderEpoch()) == term
}

// replicaSet owns this node's partition replicas.
type replicaSet struct {
	n *Node

	// mu guards reps and closed. Opening a replica (disk and Raft start-up)
	// happens outside the lock, on the reconcile goroutine only.
	mu     sync.RWMutex
	reps   map[tp]*localReplica
	closed bool

	// files holds the replicas' segment and journal files open, at most
	// Config.PartitionMaxOpenFiles of them.
	files *vfs.FileCache
}

func newReplicaSet(n *Node) *replicaSet {
	return &replicaSet{n: n, reps: map[tp]*localReplica{}, files: vfs.NewFileCache(n.cfg.PartitionMaxOpenFiles)}
}

func (s *replicaSet) get(topic string, p int32) (*localReplica, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.reps[tp{topic, p}]
	return r, ok
}

func (s *replicaSet) all() []*localReplica {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*localReplica, 0, len(s.reps))
	for _, r := range s.reps {
		out = append(out, r)
	}
	return out
}

func replicaDirName(topic string, p int32) string { return fmt.Sprintf("%s-%d", topic, p) }

// groupName is the name of a replica's Raft group.
func groupName(info replicaInfo) string { return PartitionGroup(info.TopicID, info.Partition) }

// PartitionGroup is the name of the Raft group of partition p of the topic
// whose id is topicID (metadata.TopicID's String form).
func PartitionGroup(topicID string, p int32) string {
	return "p/" + topicID + "/" + strconv.Itoa(int(p))
}

// writeReplicaInfo replaces dir's replica.json with info, atomically;
// a file that holds info already is left alone, so that a node whose
// disk is full restarts without writing.
func writeReplicaInfo(dir string, info replicaInfo) error {
	b, _ := json.Marshal(info)
	if old, err := os.ReadFile(filepath.Join(dir, "replica.json")); err == nil && bytes.Equal(old, b) {
		return nil
	}
	tmp := filepath.Join(dir, "replica.json.tmp")
	if err := os.WriteFile(tmp, b, vfs.FileMode); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "replica.json")); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}

// openFromDisk starts every replica whose directory holds a replica.json.
func (s *replicaSet) openFromDisk() error {
	entries, err := os.ReadDir(s.n.partitionsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.n.partitionsDir(), e.Name(), "replica.json"))
		if err != nil {
			s.n.logger.Warn("skipping partition directory without replica.json", "dir", e.Name(), "err", err)
			continue
		}
		var info replicaInfo
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
func (s *replicaSet) open(info replicaInfo) (*localReplica, error) {
	key := tp{info.Topic, info.Partition}
	if _, ok := s.get(info.Topic, info.Partition); ok {
		return nil, nil
	}
	dir := filepath.Join(s.n.partitionsDir(), replicaDirName(info.Topic, info.Partition))
	if err := os.MkdirAll(dir, vfs.DirMode); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if err := writeReplicaInfo(dir, info); err != nil {
		return nil, err
	}
	lr := &localReplica{info: info, ready: make(chan struct{})}
	if id, err := metadata.ParseTopicID(info.TopicID); err == nil {
		lr.id = id
	}
	logger := s.n.logger.With("partition", replicaDirName(info.Topic, info.Partition))
	lr.logger = logger
	var sink partition.RecordSink
	if info.Topic == metadata.ConsumerOffsetsTopic {
		lr.view = groupcoord.NewView()
		sink = viewSink{view: lr.view, logger: logger}
	} else if info.Topic == metadata.TransactionStateTopic {
		lr.txnView = txncoord.NewView()
		sink = txnViewSink{view: lr.txnView, logger: logger}
	}
	rep, err := partition.OpenReplica(s.n.host, partition.ReplicaConfig{
		Group: multiraft.GroupSpec{
			Name:     groupName(info),
			Members:  info.Replicas,
			Join:     info.Join,
			Dir:      dir,
			Timing:   s.n.cfg.PartitionRaft,
			LogStore: s.n.cfg.PartitionLogStore,
			Hold:     true,
			OnLeader: func(leader bool, term uint64) { s.onLeader(lr, leader, term) },
		},
		Log: seglog.Options{SegmentBytes: s.n.cfg.SegmentBytes, FS: s.n.cfg.PartitionFS, Files: s.files,
			OnFsync: s.n.metrics.ObserveFsync},
		ProducerWindow: s.n.cfg.ProducerWindow,
		MaxProducers:   s.n.cfg.MaxProducers,
		Records:        sink,
		Admit:          s.n.admitBatch(lr),
		SnapshotRoom:   s.n.disk.Admit,
		Logger:         logger,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: open replica %s-%d: %w", info.Topic, info.Partition, err)
	}
	lr.rep = rep
	lr.refreshConfig(s.n)
	close(lr.ready)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		rep.Close()
		return nil, nil
	}
	s.reps[key] = lr
	s.mu.Unlock()
	s.n.logger.Debug("replica started", "topic", info.Topic, "partition", info.Partition, "replicas", info.Replicas)
	return lr, nil
}

// reconcileLoop opens a replica for every partition the metadata assigns
// to this node. A change that leaves the layout alone (a leader report:
// thousands after a fail-over, each once a pass over every replica) is
// skipped once a pass completed for the current layout. It is owned by the
// Node.
func (s *replicaSet) reconcileLoop() {
	defer s.n.wg.Done()
	var done uint64 // the layout index the last complete pass saw; 0: none
	for {
		watch := s.n.meta.Watch() // before State, so no change is missed
		if state := s.n.meta.State(); done == 0 || state.LayoutIndex() != done {
			done = 0
			if s.reconcile(state) {
				done = state.LayoutIndex()
			}
		}
		if s.n.ctx.Err() != nil {
			return
		}
		select {
		case <-s.n.ctx.Done():
			return
		case <-watch:
		case <-time.After(s.n.cfg.Tuning.ReconcileRetry): // retry failed opens
		}
	}
}

// reconcile opens the replicas of state's partitions that this node should
// hold and does not, several at once (opening is mostly waiting for the
// disk: bbolt and bootstrap fsyncs), then releases the new groups'
// campaigns as one batch. It reports whether it completed: every replica
// opened, and moves followed with the metadata caught up.
func (s *replicaSet) reconcile(state *metadata.Snapshot) bool {
	s.removeDeleted(state)
	complete := s.followMoves(state)
	resolved := map[string]topicconfig.Config{} // once per topic, not per partition
	for _, lr := range s.all() {                // configs may have changed
		if s.n.ctx.Err() != nil {
			return false // the node is closing its replicas
		}
		c, ok := resolved[lr.info.Topic]
		if !ok {
			c = s.n.TopicConfig(lr.info.Topic)
			resolved[lr.info.Topic] = c
		}
		lr.setConfig(c)
	}
	var todo []replicaInfo
	for _, p := range state.PartitionsOn(s.n.cfg.NodeID) {
		if _, ok := s.get(p.Topic, p.Partition); ok {
			continue
		}
		id, _ := state.TopicID(p.Topic)
		part, _ := state.Partition(p.Topic, p.Partition)
		move, moving := state.Reassignment(p.Topic, p.Partition)
		todo = append(todo, replicaInfo{Topic: p.Topic, TopicID: id.String(), Partition: p.Partition,
			Replicas: part.Replicas,
			Join:     moving && slices.Contains(move.Adding(), s.n.cfg.NodeID)})
	}
	opened := make([]*multiraft.Group, len(todo))
	began := time.Now()
	var eg errgroup.Group
	eg.SetLimit(s.n.cfg.Tuning.OpenParallelism)
	for i, info := range todo {
		eg.Go(func() error {
			if s.n.ctx.Err() != nil {
				return nil
			}
			lr, err := s.open(info)
			if err != nil {
				s.n.logger.Error("could not start replica", "topic", info.Topic, "partition", info.Partition, "err", err)
			} else if lr != nil {
				opened[i] = lr.rep.Group()
			}
			return nil
		})
	}
	_ = eg.Wait()
	n := len(opened) - count(opened, nil)
	complete = complete && n == len(opened)
	if n == 0 || s.n.ctx.Err() != nil {
		return complete && s.n.ctx.Err() == nil
	}
	s.n.logger.Info("opened replicas", "count", n, "took", time.Since(began).Round(logPrecision))
	released := time.Now()
	if n := s.n.host.ReleaseCampaigns(s.n.ctx, opened); n > 0 {
		s.n.logger.Info("released the campaigns of preferred replicas", "count", n, "took", time.Since(released).Round(logPrecision))
	}
	return complete
}

// removeDeleted closes the replicas of deleted topics and removes their
// data, before a new topic of the same name may open a replica in the same
// directory. A replica is removed only when the metadata names its topic
// id as deleted, never merely because the id is unknown (a node's
// metadata may be behind its disk).
func (s *replicaSet) removeDeleted(state *metadata.Snapshot) {
	s.removeWhere("the topic was deleted", func(lr *localReplica) bool {
		return !lr.id.IsZero() && state.TopicDeleted(lr.id)
	})
}

// removeWhere closes the replicas for which gone holds, forgets them and
// removes their data, saying why in the log.
func (s *replicaSet) removeWhere(why string, gone func(*localReplica) bool) {
	var out []*localReplica
	s.mu.Lock()
	for key, lr := range s.reps {
		if gone(lr) {
			out = append(out, lr)
			delete(s.reps, key)
		}
	}
	s.mu.Unlock()
	for _, lr := range out {
		<-lr.ready
		if err := lr.rep.Close(); err != nil {
			lr.logger.Warn("closing a replica to remove", "why", why, "err", err)
		}
		dir := filepath.Join(s.n.partitionsDir(), replicaDirName(lr.info.Topic, lr.info.Partition))
		if err := s.n.host.RemoveState(groupName(lr.info), dir); err != nil {
			lr.logger.Error("removing a replica", "why", why, "dir", dir, "err", err)
			continue
		}
		lr.logger.Info("removed the replica", "why", why, "topic_id", lr.info.TopicID)
	}
}

// onLeader runs on the replica's goroutine when this node gains or loses
// leadership: a new leader reports itself to the metadata group.
func (s *replicaSet) onLeader(lr *localReplica, leader bool, term uint64) {
	if lr.view != nil {
		s.n.coords.leadership(lr, leader, term)
	}
	if lr.txnView != nil {
		s.n.txns.leadership(lr, leader, term)
	}
	if !leader {
		return
	}
	s.n.logger.Debug("became partition leader", "topic", lr.info.Topic, "partition", lr.info.Partition, "epoch", term)
	s.n.meta.ReportLeader(lr, term)
}

// count returns how many elements of s equal v.
func count[T comparable](s []T, v T) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// closeAll closes every replica, in parallel.
func (s *replicaSet) closeAll() error {
	s.mu.Lock()
	s.closed = true
	reps := s.reps
	s.reps = map[tp]*localReplica{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, len(reps))
	for _, lr := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- lr.rep.Close()
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}
