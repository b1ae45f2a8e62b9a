package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/multiraft"
)

// A killed node's partitions get new leaders from the nodes' liveness
// watch, not from raft's timeouts: the partition groups here wait 30 s
// for a silent leader, twice the test's waits, so only the successor
// elections can elect in time. Each partition's new leader is its first
// replica other than the killed node, and nothing acknowledged is lost.
func TestKilledLeadersReplacedWithoutWaitingForRaftTimeouts(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, slowPartitionRaft)
	cl := c.Client(t, kgo.DefaultProduceTopic("lost"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const parts = 6
	createTopic(t, cl, "lost", parts, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(cl *kgo.Client, tag string) {
		t.Helper()
		for p := int32(0); p < parts; p++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lost", Partition: p, Value: []byte(tag)}).FirstErr(); err != nil {
				t.Fatalf("produce %s to partition %d: %v", tag, p, err)
			}
		}
	}
	produce(cl, "before")

	before := map[int32][2]int32{} // partition -> leader, epoch
	count := map[int32]int{}       // node -> partitions led
	for p := int32(0); p < parts; p++ {
		l, e := c.Leader("lost", p, 15*time.Second)
		if l < 0 {
			t.Fatalf("partition %d has no leader", p)
		}
		before[p] = [2]int32{l, e}
		count[l]++
	}
	victim := int32(1)
	for id, n := range count {
		if n > count[victim] {
			victim = id
		}
	}
	replicas := metadataOf(t, cl, "lost")
	t.Logf("killing node %d, which leads %d of %d partitions", victim, count[victim], parts)
	killed := time.Now()
	c.HaltNode(int(victim))

	survivor := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < parts; p++ {
		if before[p][0] != victim {
			continue
		}
		l, e := c.Leader("lost", p, 15*time.Second)
		if l < 0 || l == victim || e <= before[p][1] {
			t.Fatalf("partition %d after killing node %d (its leader at epoch %d): leader %d epoch %d",
				p, victim, before[p][1], l, e)
		}
		if successor := multiraft.SuccessorOrder(replicas[p].group, replicas[p].replicas, victim)[0]; l != successor {
			t.Errorf("partition %d (replicas %v): new leader %d, want its first successor %d", p, replicas[p].replicas, l, successor)
		}
	}
	t.Logf("new leaders after %v", time.Since(killed).Round(time.Millisecond))
	produce(survivor, "after")
	t.Logf("produced after %v", time.Since(killed).Round(time.Millisecond))
	got := map[int32][]string{}
	for _, r := range consumeAll(t, c.Seeds(), "lost", 2*parts) {
		got[r.Partition] = append(got[r.Partition], string(r.Value))
	}
	t.Logf("consumed after %v", time.Since(killed).Round(time.Millisecond))
	for p := int32(0); p < parts; p++ {
		if v := got[p]; len(v) != 2 || v[0] != "before" || v[1] != "after" {
			t.Errorf("partition %d holds %q, want [before after]", p, v)
		}
	}
}

// slowPartitionRaft gives partition groups raft timeouts longer than the
// tests' waits, so that only the node's own mechanisms (successor
// elections, leadership transfers) can move a leadership in time.
func slowPartitionRaft(cfg *broker.Config) {
	cfg.PartitionRaft = testcluster.Timing()
	cfg.PartitionRaft.HeartbeatTimeout = 30 * time.Second
	cfg.PartitionRaft.ElectionTimeout = 30 * time.Second
	cfg.PartitionRaft.LeaderLeaseTimeout = 10 * time.Second
}

// A node shutting down while another is down hands each leadership to a
// replica whose node is up: raft's own choice, the most up-to-date
// follower, may be the node that is down, and that transfer would only
// fail after the election timeout.
func TestShutdownHandsLeadershipsToLiveNodes(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 5, slowPartitionRaft, func(cfg *broker.Config) { cfg.DefaultReplicationFactor = 3 })
	cl := c.Client(t)
	const parts = 10
	createTopic(t, cl, "handoff", parts, 3)
	for p := int32(0); p < parts; p++ {
		if l, _ := c.Leader("handoff", p, 15*time.Second); l < 0 {
			t.Fatalf("partition %d has no leader", p)
		}
	}
	meta := metadataOf(t, cl, "handoff")
	// Partition 0's preferred replica (its leader since creation) is the
	// node to stop, and its second replica the node to kill: both
	// followers are equally up to date, and raft's own pick would be the
	// first of them in the group's configuration, the dead one.
	stopping, down := meta[0].replicas[0], meta[0].replicas[1]
	c.HaltNode(int(down))
	var moved []int32
	for p := int32(0); p < parts; p++ {
		l, _ := c.Leader("handoff", p, 15*time.Second)
		if l < 0 {
			t.Fatalf("partition %d has no leader after node %d was killed", p, down)
		}
		if l == stopping && slices.Contains(meta[p].replicas, down) {
			moved = append(moved, p)
		}
	}
	if len(moved) == 0 {
		t.Fatalf("no partition led by node %d has a replica on node %d; placement: %v", stopping, down, meta)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Node(int(stopping)).Shutdown(ctx); err != nil {
		t.Fatalf("shutdown of node %d: %v", stopping, err)
	}
	c.StopNode(int(stopping)) // already down; takes it out of the cluster's list
	// Each heir is left alone with two of its three replicas gone, so it
	// steps down once its leader lease (10 s) runs out: it must be seen
	// leading, first hand, before then, every moved partition at once.
	heirs := map[int32]int32{}
	for _, p := range moved {
		for _, r := range meta[p].replicas {
			if r != down && r != stopping {
				heirs[p] = r
			}
		}
	}
	deadline := time.Now().Add(8 * time.Second)
	for len(heirs) > 0 && time.Now().Before(deadline) {
		for p, heir := range heirs {
			if l, _, ok := c.Node(int(heir)).PartitionLeader("handoff", p); ok && l == heir {
				delete(heirs, p)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for p, heir := range heirs {
		t.Errorf("partition %d (replicas %v, node %d down, node %d stopped): node %d was not seen leading it",
			p, meta[p].replicas, down, stopping, heir)
	}
}
