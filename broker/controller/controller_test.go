package controller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/multiraft"
)

// staticMembers is gossip that always sees the same nodes.
type staticMembers struct {
	mu    sync.Mutex // guards nodes
	nodes []membership.NodeMeta
}

func (m *staticMembers) Members() []membership.NodeMeta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]membership.NodeMeta(nil), m.nodes...)
}

// fakeLeadership is a replica that leads its partition in one term.
type fakeLeadership struct {
	topic string
	p     int32
	term  uint64
	open  chan struct{}
}

func (l *fakeLeadership) TopicPartition() (string, int32) { return l.topic, l.p }
func (l *fakeLeadership) Opened() <-chan struct{}         { return l.open }
func (l *fakeLeadership) LeadsIn(term uint64) bool        { return term == l.term }

func testTuning() Tuning {
	return Tuning{DutyInterval: 50 * time.Millisecond, Proposal: 5 * time.Second,
		RetryMin: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond,
		Forward: 5 * time.Second, Apply: 5 * time.Second, Serve: 10 * time.Second, MaxFrame: 1 << 20,
		LeaderReport: 5 * time.Second, LeaderReportRetry: 50 * time.Millisecond, MinWait: time.Millisecond}
}

// startPair starts two controllers, each on its own Raft port, that
// bootstrap the metadata group together, and waits until both know the
// cluster.
func startPair(t *testing.T) [2]*Controller {
	t.Helper()
	timing := multiraft.DefaultTiming()
	timing.HeartbeatTimeout, timing.ElectionTimeout = 200*time.Millisecond, 200*time.Millisecond
	timing.LeaderLeaseTimeout, timing.CommitTimeout = 100*time.Millisecond, 10*time.Millisecond
	var (
		mu    sync.Mutex // guards addrs
		addrs = map[int32]string{}
	)
	resolve := func(id int32) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		a, ok := addrs[id]
		return a, ok
	}
	members := &staticMembers{}
	hosts := make([]*multiraft.Host, 2)
	for i := range hosts {
		id := int32(i + 1)
		h, err := multiraft.Listen(multiraft.Config{NodeID: id, BindAddr: "127.0.0.1:0", Resolve: resolve})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		hosts[i] = h
		mu.Lock()
		addrs[id] = h.Addr()
		mu.Unlock()
		members.nodes = append(members.nodes, membership.NodeMeta{ID: id, RaftAddr: h.Addr(), KafkaAddr: "127.0.0.1:9092"})
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var cs [2]*Controller
	dir := t.TempDir()
	for i, h := range hosts {
		id := int32(i + 1)
		c, err := New(ctx, Config{NodeID: id, Dir: filepath.Join(dir, h.Addr()), Raft: timing, BootstrapExpect: 2,
			Tuning: testTuning()},
			Deps{FSM: metadata.NewFSM(), Raft: h, Members: members, Resolve: resolve,
				MemberEvents: make(chan struct{}), Logger: logging.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.StartDuties()
		cs[i] = c
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	for _, c := range cs {
		_, err := c.WaitFor(wctx, func(s *metadata.Snapshot) bool {
			_, r1 := s.Broker(1)
			_, r2 := s.Broker(2)
			return s.Initialized() && s.HasProducerIDKey() && r1 && r2
		})
		if err != nil {
			t.Fatalf("node %d never knew the cluster: %v", c.cfg.NodeID, err)
		}
	}
	return cs
}

// A follower's proposals reach the leader over rpc/meta; a producer id, a
// topic and a leader report made on either node show on both.
func TestControllerPairProposesFromEitherNode(t *testing.T) {
	cs := startPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var follower *Controller
	for _, c := range cs {
		if c.LeaderID() != c.cfg.NodeID {
			follower = c
		}
	}
	if follower == nil || follower.LeaderID() < 0 {
		t.Fatalf("no follower with a known leader")
	}
	a, err := follower.NewProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cs[0].NewProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.ProducerID == b.ProducerID {
		t.Fatalf("two allocations gave producer id %d", a.ProducerID)
	}
	if _, err := follower.Propose(ctx, metadata.CreateTopic{Name: "t", Partitions: 1, ReplicationFactor: 2,
		Assignment: [][]int32{{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	l := &fakeLeadership{topic: "t", p: 0, term: 3, open: make(chan struct{})}
	cs[1].ReportLeader(l, 3)
	close(l.open)
	for _, c := range cs {
		if _, err := c.WaitFor(ctx, func(s *metadata.Snapshot) bool {
			p, ok := s.Partition("t", 0)
			return ok && p.Leader == 2 && p.LeaderEpoch == 3
		}); err != nil {
			t.Fatalf("node %d never saw node 2's leadership: %v", c.cfg.NodeID, err)
		}
	}
	// An entry committed but not yet applied, or a heartbeat late on a
	// loaded machine, makes CaughtUp false for a moment: it must become
	// true, not be true at this very instant.
	for deadline := time.Now().Add(10 * time.Second); !follower.CaughtUp(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the follower does not count as caught up within 10s")
		}
	}
}

// A proposal whose request has already ended (its client gave up, its
// deadline passed) is not proposed: it answers REQUEST_TIMED_OUT and the
// metadata never holds it, on the leader and on a follower alike. (It
// was proposed with MinWait, so a request past its deadline went on
// creating topics its client was no longer waiting for.)
func TestProposeAfterTheRequestEndedProposesNothing(t *testing.T) {
	cs := startPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ended, end := context.WithCancel(ctx)
	end()
	for _, c := range cs {
		name := fmt.Sprintf("late%d", c.cfg.NodeID)
		_, err := c.Propose(ended, metadata.CreateTopic{Name: name, Partitions: 1, ReplicationFactor: 1,
			Assignment: [][]int32{{1}}})
		if !errors.Is(err, kerr.RequestTimedOut) || !errors.Is(err, context.Canceled) {
			t.Fatalf("node %d: a proposal after its request ended gave %v", c.cfg.NodeID, err)
		}
	}
	if _, err := cs[0].Propose(ctx, metadata.CreateTopic{Name: "after", Partitions: 1, ReplicationFactor: 1,
		Assignment: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		s, err := c.WaitFor(ctx, func(s *metadata.Snapshot) bool { _, ok := s.Topic("after"); return ok })
		if err != nil {
			t.Fatal(err)
		}
		if names := s.TopicNames(); len(names) != 1 {
			t.Fatalf("node %d holds topics %v, want only the one proposed in time", c.cfg.NodeID, names)
		}
	}
}
