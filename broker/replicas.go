package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/raftmux"
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
}

// localReplica is one open replica with what the node needs to know of it.
type localReplica struct {
	info  replicaInfo
	rep   *partition.Replica      // set once, before ready is closed
	trans *raftmux.GroupTransport // the group's transport, under rep's heartbeatGuard
	ready chan struct{}
}

// members returns the replica's group members as Raft server ids, in
// assignment order.
func (lr *localReplica) members() []raft.ServerID {
	ids := make([]raft.ServerID, len(lr.info.Replicas))
	for i, r := range lr.info.Replicas {
		ids[i] = membership.ServerID(r)
	}
	return ids
}

// replicaSet owns this node's partition replicas.
type replicaSet struct {
	n *Node

	// mu guards reps and closed. Opening a replica (disk and Raft start-up)
	// happens outside the lock, on the reconcile goroutine only.
	mu     sync.RWMutex
	reps   map[tp]*localReplica
	closed bool

	// memberCh wakes the rebalance loop when membership changes.
	memberCh chan struct{}
}

func newReplicaSet(n *Node) *replicaSet {
	return &replicaSet{n: n, reps: map[tp]*localReplica{}, memberCh: make(chan struct{}, 1)}
}

func (s *replicaSet) memberChanged() {
	select {
	case s.memberCh <- struct{}{}:
	default:
	}
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
		if _, err := s.open(info, nil); err != nil {
			return err
		}
	}
	return nil
}

// open starts one replica and returns it (nil if it was open already).
// addrs gives Raft addresses for a brand-new group's bootstrap
// configuration; a group with state ignores them. A brand-new group of
// more than one replica starts held back from campaigning until
// releaseCampaigns (or newGroupHold).
func (s *replicaSet) open(info replicaInfo, addrs map[int32]string) (*localReplica, error) {
	key := tp{info.Topic, info.Partition}
	if _, ok := s.get(info.Topic, info.Partition); ok {
		return nil, nil
	}
	dir := filepath.Join(s.n.partitionsDir(), replicaDirName(info.Topic, info.Partition))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(dir, "replica.json"), b, 0o644); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	var servers []raft.Server
	for _, id := range info.Replicas {
		addr := addrs[id]
		if addr == "" {
			addr = "unknown-" + strconv.Itoa(int(id)) // resolved through addrProvider
		}
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: membership.ServerID(id), Address: raft.ServerAddress(addr)})
	}
	mt, err := s.n.mux.Transport("p/"+info.TopicID+"/"+strconv.Itoa(int(info.Partition)),
		raftmux.TransportConfig{ServerAddressProvider: s.n.addrs, MaxRPCsInFlight: noPipelining})
	if err != nil {
		return nil, fmt.Errorf("broker: transport for %s-%d: %w", info.Topic, info.Partition, err)
	}
	trans := newHeartbeatGuard(mt)
	lr := &localReplica{info: info, trans: mt, ready: make(chan struct{})}
	var hold time.Duration // reopened groups ignore it
	if len(info.Replicas) > 1 {
		hold = newGroupHold * s.n.cfg.PartitionRaft.HeartbeatTimeout
	}
	rep, err := partition.OpenReplica(partition.ReplicaConfig{
		Dir:            dir,
		LocalID:        s.n.id,
		Servers:        servers,
		Transport:      trans,
		Timing:         s.n.cfg.PartitionRaft,
		Log:            partition.LogOptions{SegmentBytes: s.n.cfg.SegmentBytes},
		ProducerWindow: s.n.cfg.ProducerWindow,
		OnLeader:       func(leader bool, term uint64) { s.onLeader(lr, leader, term) },
		Logger:         s.n.logger.With("partition", replicaDirName(info.Topic, info.Partition)),
		CampaignDelay:  hold,
	})
	if err != nil {
		trans.Close()
		return nil, fmt.Errorf("broker: open replica %s-%d: %w", info.Topic, info.Partition, err)
	}
	trans.watch(rep.Raft())
	lr.rep = rep
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
// to this node. It is owned by the Node.
func (s *replicaSet) reconcileLoop() {
	defer s.n.wg.Done()
	for {
		watch := s.n.meta.fsm.Watch() // before State, so no change is missed
		state := s.n.meta.fsm.State()
		var todo []replicaInfo
		var addrs []map[int32]string
		for _, p := range state.PartitionsOn(s.n.cfg.NodeID) {
			if _, ok := s.get(p.Topic, p.Partition); ok {
				continue
			}
			t, _ := state.Topic(p.Topic)
			info := replicaInfo{Topic: t.Name, TopicID: t.ID.String(), Partition: p.Partition,
				Replicas: slices.Clone(t.Partitions[p.Partition].Replicas)}
			a := map[int32]string{}
			for _, id := range info.Replicas {
				if b, ok := state.Broker(id); ok {
					a[id] = b.RaftAddr
				}
			}
			todo = append(todo, info)
			addrs = append(addrs, a)
		}
		// Opening a replica is mostly waiting for the disk (bbolt and
		// bootstrap fsyncs), so a topic with many partitions opens them
		// several at a time.
		opened := make([]*localReplica, len(todo))
		began := time.Now()
		parallel(len(todo), openParallelism, func(i int) {
			if s.n.ctx.Err() != nil {
				return
			}
			lr, err := s.open(todo[i], addrs[i])
			if err != nil {
				s.n.logger.Error("could not start replica", "topic", todo[i].Topic, "partition", todo[i].Partition, "err", err)
			}
			opened[i] = lr
		})
		if n := len(opened) - count(opened, nil); n > 0 && s.n.ctx.Err() == nil {
			s.n.logger.Info("opened replicas", "count", n, "took", time.Since(began).Round(time.Millisecond))
			released := time.Now()
			if n := s.releaseCampaigns(opened); n > 0 {
				s.n.logger.Info("released the campaigns of preferred replicas", "count", n, "took", time.Since(released).Round(time.Millisecond))
			}
		}
		if s.n.ctx.Err() != nil {
			return
		}
		select {
		case <-s.n.ctx.Done():
			return
		case <-watch:
		case <-time.After(5 * time.Second): // retry failed opens
		}
	}
}

// onLeader runs on the replica's goroutine when this node gains or loses
// leadership: a new leader reports itself to the metadata group.
func (s *replicaSet) onLeader(lr *localReplica, leader bool, term uint64) {
	if !leader {
		return
	}
	s.n.logger.Debug("became partition leader", "topic", lr.info.Topic, "partition", lr.info.Partition, "epoch", term)
	s.n.wg.Add(1)
	go func() {
		defer s.n.wg.Done()
		select { // the callback can come before OpenReplica returns
		case <-lr.ready:
		case <-s.n.ctx.Done():
			return
		}
		cmd := metadata.SetPartitionLeader{Topic: lr.info.Topic, Partition: lr.info.Partition,
			Leader: s.n.cfg.NodeID, Epoch: int32(term)}
		for s.n.ctx.Err() == nil && lr.rep.IsLeader() && int64(lr.rep.LeaderEpoch()) == int64(term) {
			ctx, cancel := context.WithTimeout(s.n.ctx, 10*time.Second)
			_, err := s.n.proposeMeta(ctx, cmd)
			cancel()
			if err == nil {
				return
			}
			s.n.logger.Debug("leader report not applied yet", "topic", cmd.Topic, "partition", cmd.Partition, "err", err)
			select {
			case <-s.n.ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

// rebalanceLoop hands leadership back to each partition's preferred
// replica (the first in its list) when that replica is alive, so that
// leaders stay spread as placement intended. It is owned by the Node.
func (s *replicaSet) rebalanceLoop() {
	defer s.n.wg.Done()
	if s.n.cfg.LeaderRebalanceInterval <= 0 {
		return
	}
	// The first pass comes soon after start so that new topics spread
	// their leaders quickly.
	timer := time.NewTimer(2 * time.Second)
	defer timer.Stop()
	for {
		select {
		case <-s.n.ctx.Done():
			return
		case <-timer.C:
		}
		s.rebalanceOnce()
		timer.Reset(s.n.cfg.LeaderRebalanceInterval)
	}
}

func (s *replicaSet) rebalanceOnce() {
	alive := map[int32]bool{}
	for _, m := range s.n.members.Members() {
		alive[m.ID] = true
	}
	var moves []*localReplica
	for _, lr := range s.all() {
		pref := lr.info.Replicas[0]
		if pref != s.n.cfg.NodeID && alive[pref] && lr.rep.IsLeader() {
			moves = append(moves, lr)
		}
	}
	parallel(len(moves), transferParallelism, func(i int) {
		lr := moves[i]
		if s.n.ctx.Err() != nil {
			return
		}
		pref := membership.ServerID(lr.info.Replicas[0])
		addr, err := s.n.addrs.ServerAddr(pref)
		if err != nil || !s.n.mux.PeerUp(string(addr)) {
			// Gossip still lists a node for seconds after its process
			// ends; a transfer to it would block the partition's writes
			// until raft's election timeout.
			return
		}
		if err := lr.rep.TransferLeadership(s.n.ctx, pref, addr); err != nil {
			s.n.logger.Debug("leadership transfer to preferred replica failed", "topic", lr.info.Topic,
				"partition", lr.info.Partition, "to", pref, "err", err)
		}
	})
}

// noPipelining turns off raft's pipelined replication (MaxRPCsInFlight 1).
// In hashicorp/raft v1.8.0 the pipeline can deadlock: when a follower
// answers Success=false (a stale term, or a log mismatch after a leader
// change), pipelineDecode returns and stops reading the pipeline's done
// channel while pipelineSend parks on its in-progress channel; the
// follower then gets heartbeats but never another entry, and
// raft.Shutdown waits forever (seen in our tests; also reported in
// grafana/pyroscope#5518). Synchronous AppendEntries still batch up to
// MaxAppendEntries entries per RPC.
const noPipelining = 1

// Campaigns of new groups. Every replica of a brand-new group (more than
// one replica) opens held back from campaigning, for newGroupHold
// heartbeat timeouts at most. Once this node has opened the batch the
// group came with (every partition of a new topic), releaseCampaigns makes
// the preferred replicas (first in the assignment: the leader placement
// wants) campaign, at most campaignsInFlight at a time, each releasing
// the next once it has a leader or after campaignSlot. A preferred replica
// campaigns through raftmux.GroupTransport.StartElection: at once, without
// a pre-vote round, whatever the heartbeat timeout (a peer that has not
// opened the group yet holds the vote request until it has, see
// raftmux.rpcOpenGrace). The other replicas
// stay held (they vote and follow, but do not campaign) until 8 heartbeat
// timeouts after they first hear of a leader (raftgroup), or newGroupSettle
// to twice that heartbeat timeouts after the batch (5-10 s with the
// defaults), then take the normal timing: a group whose preferred replica
// is down elects one of them then.
//
// Before this, 1000 new groups (RF3) on 3 nodes of 2 cores never elected
// (0 of 1000 led after 150 s, twice): all 3000 replicas campaigned while
// their peers were still opening theirs, and every failed pre-vote dialled
// a new per-group connection (the acceptor allocating a 256 KiB read
// buffer in raft's NetworkTransport), until nodes saturated and votes and
// heartbeats timed out. With it, 200 new groups elect in 2.0 s (2.5 s)
// with leaders 67/67/66 at once (52/107/41, then rebalanced); 1000 elect
// in 11.7-13.8 s in some runs but still storm in others (see
// heartbeatGuard for the rest of the mechanism).
//
// A small batch (a topic of a few partitions) cannot storm, and a long hold
// only slows its fail-over: a leader killed seconds after the topic was
// created took 3-4.5 s to replace (make e2e) instead of 1-2 s. Its other
// replicas therefore take the normal timing smallBatchSettle heartbeat
// timeouts after the batch opened.
const (
	smallBatch        = 32  // replicas opened together on this node
	smallBatchSettle  = 2   // heartbeat timeouts
	newGroupHold      = 120 // heartbeat timeouts
	newGroupSettle    = 10  // heartbeat timeouts, plus up to as many again
	campaignsInFlight = 8
	campaignSlot      = 2 * time.Second
)

// releaseCampaigns ends the campaign hold of a batch of newly opened
// replicas (nil entries are skipped), as described above. It returns once
// every preferred replica is released, or when the node stops, with the
// number of preferred replicas.
func (s *replicaSet) releaseCampaigns(batch []*localReplica) int {
	hb := s.n.cfg.PartitionRaft.HeartbeatTimeout
	var preferred []*localReplica
	for _, lr := range batch {
		switch {
		case lr == nil || !lr.rep.CampaignHeld():
		case lr.info.Replicas[0] == s.n.cfg.NodeID:
			preferred = append(preferred, lr)
		case len(batch) <= smallBatch:
			lr.rep.ReleaseCampaign(smallBatchSettle * hb)
		default:
			lr.rep.ReleaseCampaign(newGroupSettle*hb + rand.N(newGroupSettle*hb))
		}
	}
	type campaign struct {
		lr    *localReplica
		until time.Time
	}
	var inFlight []campaign
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for _, lr := range preferred {
		for len(inFlight) >= campaignsInFlight {
			select {
			case <-s.n.ctx.Done():
				return len(preferred)
			case <-tick.C:
			}
			now := time.Now()
			inFlight = slices.DeleteFunc(inFlight, func(c campaign) bool {
				return c.lr.rep.Leader() != "" || now.After(c.until)
			})
		}
		// The preferred replica campaigns at once, without raft's pre-vote
		// round and whatever its heartbeat timeout (a new group has no
		// leader to disrupt), and its timing goes back to normal.
		ctx, cancel := context.WithTimeout(s.n.ctx, time.Second)
		if err := lr.trans.StartElection(ctx); err != nil {
			s.n.logger.Debug("could not start the first election", "topic", lr.info.Topic, "partition", lr.info.Partition, "err", err)
		}
		cancel()
		lr.rep.ReleaseCampaign(0)
		inFlight = append(inFlight, campaign{lr, time.Now().Add(campaignSlot)})
	}
	return len(preferred)
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

// How many replicas open, and how many leaderships move, at once.
const (
	openParallelism     = 8
	transferParallelism = 16
)

// parallel calls f(0..n-1) on at most k goroutines and waits for them.
func parallel(n, k int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(n, k) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// transferAll hands every leadership this node holds to another replica,
// in parallel, bounded by ctx: to the first other replica in the
// partition's assignment whose node is up (Node.liveTarget), and not at
// all when none is (raft's own pick could be a node that is down, and
// would then wait out the election timeout for nothing).
func (s *replicaSet) transferAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, lr := range s.all() {
		if !lr.rep.IsLeader() || len(lr.info.Replicas) < 2 {
			continue
		}
		to, addr, ok := s.n.liveTarget(lr.members())
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lr.rep.TransferLeadership(ctx, to, addr)
		}()
	}
	wg.Wait()
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
