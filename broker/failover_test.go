package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A killed node's partitions get new leaders from the nodes' liveness
// watch, not from raft's timeouts: the partition groups here wait 30 s
// for a silent leader, twice the test's waits, so only the successor
// elections can elect in time. Each partition's new leader is its first
// replica other than the killed node, and nothing acknowledged is lost.
func TestKilledLeadersReplacedWithoutWaitingForRaftTimeouts(t *testing.T) {
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.PartitionRaft = testcluster.Timing()
		cfg.PartitionRaft.HeartbeatTimeout = 30 * time.Second
		cfg.PartitionRaft.ElectionTimeout = 30 * time.Second
		cfg.PartitionRaft.LeaderLeaseTimeout = 10 * time.Second
	})
	cl := kgoClient(t, c, kgo.DefaultProduceTopic("lost"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
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
	c.HaltNode(int(victim))

	survivor := kgoClient(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < parts; p++ {
		if before[p][0] != victim {
			continue
		}
		l, e := c.Leader("lost", p, 15*time.Second)
		if l < 0 || l == victim || e <= before[p][1] {
			t.Fatalf("partition %d after killing node %d (its leader at epoch %d): leader %d epoch %d",
				p, victim, before[p][1], l, e)
		}
		var successor int32 = -1
		for _, r := range replicas[p].replicas {
			if r != victim {
				successor = r
				break
			}
		}
		if l != successor {
			t.Errorf("partition %d (replicas %v): new leader %d, want the first survivor %d", p, replicas[p].replicas, l, successor)
		}
	}
	produce(survivor, "after")
	got := map[int32][]string{}
	for _, r := range consumeAll(t, c.Seeds(), "lost", 2*parts) {
		got[r.Partition] = append(got[r.Partition], string(r.Value))
	}
	for p := int32(0); p < parts; p++ {
		if v := got[p]; len(v) != 2 || v[0] != "before" || v[1] != "after" {
			t.Errorf("partition %d holds %q, want [before after]", p, v)
		}
	}
}
