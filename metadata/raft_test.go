package metadata

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// raftNode is one member of an in-memory metadata group.
type raftNode struct {
	id    raft.ServerID
	addr  raft.ServerAddress
	trans *raft.InmemTransport
	store *raft.InmemStore
	fsm   *FSM
	raft  *raft.Raft
}

func fastConfig(id raft.ServerID) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = id
	c.HeartbeatTimeout = 50 * time.Millisecond
	c.ElectionTimeout = 50 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.TrailingLogs = 0 // a snapshot compacts the whole log, so joiners need InstallSnapshot
	c.Logger = logging.HCLog(logging.Discard(), "raft", logging.LevelOff)
	return c
}

// startNode starts a member; with bootstrap, it bootstraps the given servers.
func startNode(t *testing.T, i int, bootstrap []raft.Server, peers []*raftNode) *raftNode {
	t.Helper()
	n := &raftNode{id: raft.ServerID(fmt.Sprint(i)), fsm: NewFSM(quiet()), store: raft.NewInmemStore()}
	n.addr, n.trans = raft.NewInmemTransport(raft.ServerAddress(fmt.Sprintf("node%d", i)))
	for _, p := range peers {
		n.trans.Connect(p.addr, p.trans)
		p.trans.Connect(n.addr, n.trans)
	}
	conf := fastConfig(n.id)
	snaps := raft.NewInmemSnapshotStore()
	if bootstrap != nil {
		if err := raft.BootstrapCluster(conf, n.store, n.store, snaps, n.trans, raft.Configuration{Servers: bootstrap}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := raft.NewRaft(conf, n.fsm, n.store, n.store, snaps, n.trans)
	if err != nil {
		t.Fatal(err)
	}
	n.raft = r
	t.Cleanup(func() { n.stop(t) })
	return n
}

func (n *raftNode) stop(t *testing.T) {
	if n.raft == nil {
		return
	}
	if err := n.raft.Shutdown().Error(); err != nil {
		t.Errorf("shutdown %s: %v", n.id, err)
	}
	n.raft = nil
	n.trans.DisconnectAll()
	_ = n.trans.Close()
}

// leader polls until one running node leads.
func leader(t *testing.T, nodes []*raftNode) *raftNode {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			if n.raft != nil && n.raft.State() == raft.Leader {
				return n
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no leader elected")
	return nil
}

// propose applies cmd through Raft and returns its response and log index.
func propose(t *testing.T, n *raftNode, cmd Command) (any, uint64) {
	t.Helper()
	f := n.raft.Apply(mustEncode(t, cmd), 5*time.Second)
	if err := f.Error(); err != nil {
		t.Fatalf("raft.Apply(%T): %v", cmd, err)
	}
	return f.Response(), f.Index()
}

func waitIndex(t *testing.T, n *raftNode, index uint64) *Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := n.fsm.WaitFor(ctx, func(s *Snapshot) bool { return s.AppliedIndex() >= index })
	if err != nil {
		t.Fatalf("node %s did not reach index %d: %v", n.id, index, err)
	}
	return s
}

// The FSM under real raft.Apply: results come back through the future, all
// members converge, a joiner catches up from a snapshot (Persist and
// Restore), and a new leader continues producer ids without reuse.
func TestFSMUnderRaft(t *testing.T) {
	servers := make([]raft.Server, 3)
	for i := range servers {
		servers[i] = raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(fmt.Sprint(i)), Address: raft.ServerAddress(fmt.Sprintf("node%d", i))}
	}
	var nodes []*raftNode
	for i := range servers {
		nodes = append(nodes, startNode(t, i, servers, nodes))
	}
	l := leader(t, nodes)

	if res, _ := propose(t, l, InitCluster{ClusterID: "cluster-1"}); res != (InitClusterResult{ClusterID: "cluster-1", Changed: true}) {
		t.Fatalf("InitCluster: %#v", res)
	}
	for i := range nodes {
		propose(t, l, RegisterBroker{ID: int32(i), KafkaAddr: fmt.Sprintf("node%d:9092", i), RaftAddr: fmt.Sprintf("node%d:9093", i)})
	}
	st := l.fsm.State()
	assignment, err := Place(st.BrokerIDs(), st.Load(), 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := propose(t, l, CreateTopic{Name: "events", Partitions: 2, ReplicationFactor: 3, Assignment: assignment})
	created, ok := res.(CreateTopicResult)
	if !ok || created.Topic.ID.IsZero() {
		t.Fatalf("CreateTopic: %#v", res)
	}
	// A rejected command comes back as an error value.
	res, _ = propose(t, l, CreateTopic{Name: "events", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{0}}})
	if err, _ := res.(error); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate CreateTopic: %#v", res)
	}
	propose(t, l, SetPartitionLeader{Topic: "events", Partition: 0, Leader: assignment[0][0], Epoch: 3})
	res, _ = propose(t, l, AllocateProducerID{TransactionalID: ptr("tx")})
	first := res.(ProducerIdentity)
	res, last := propose(t, l, AllocateProducerID{TransactionalID: ptr("tx")})
	if res != (ProducerIdentity{first.ProducerID, 1}) {
		t.Fatalf("second InitProducerId for tx: %#v after %#v", res, first)
	}

	want := waitIndex(t, l, last)
	for _, n := range nodes {
		if got := waitIndex(t, n, last); !got.Equal(want) {
			t.Fatalf("node %s differs from the leader", n.id)
		}
		if got, _ := n.fsm.State().Topic("events"); got.ID != created.Topic.ID {
			t.Fatalf("node %s has topic id %v, leader %v", n.id, got.ID, created.Topic.ID)
		}
	}

	// Snapshot and compact the whole log; a new non-voter can then only
	// catch up through InstallSnapshot, i.e. Persist on the leader and
	// Restore on the joiner.
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if first, _ := l.store.FirstIndex(); first != 0 && first <= last { // 0: empty log
		t.Fatalf("log not compacted: first index %d, snapshot at %d", first, last)
	}
	joiner := startNode(t, 3, nil, nodes)
	if err := l.raft.AddNonvoter(joiner.id, joiner.addr, 0, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if got := waitIndex(t, joiner, last); !got.Equal(want) {
		t.Fatal("joiner restored from the snapshot differs from the leader")
	}
	nodes = append(nodes, joiner)

	// Fail over: a new leader continues the producer ids.
	l.stop(t)
	for _, n := range nodes {
		if n != l {
			n.trans.Disconnect(l.addr)
		}
	}
	l2 := leader(t, nodes)
	res, last = propose(t, l2, AllocateProducerID{})
	if p := res.(ProducerIdentity); p.ProducerID <= first.ProducerID {
		t.Fatalf("new leader handed out %d after %d", p.ProducerID, first.ProducerID)
	}
	want = waitIndex(t, l2, last)
	for _, n := range nodes {
		if n != l {
			if got := waitIndex(t, n, last); !got.Equal(want) {
				t.Fatalf("node %s differs after failover", n.id)
			}
		}
	}
}
