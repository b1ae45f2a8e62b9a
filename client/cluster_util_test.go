package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// Helpers of the tests that run our client against an in-process 3-node
// MiniKafka cluster (internal/testcluster): real Raft, real TCP, real
// files.

// startCluster starts 3 nodes and creates each topic with its partition
// count and replication factor 3, waiting until every partition has a
// leader.
func startCluster(t testing.TB, topics map[string]int32) *testcluster.Cluster {
	t.Helper()
	c := testcluster.Start(t, 3)
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, parts := range topics {
		// On a fresh cluster, TOPIC_ALREADY_EXISTS means a retried create
		// whose first attempt succeeded without its answer arriving.
		if err := adm.CreateTopic(ctx, name, parts, 3, nil); err != nil && !errors.Is(err, client.ErrTopicAlreadyExists) {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	for name := range topics {
		waitPreferredLeaders(t, c, name)
	}
	return c
}

// waitPreferredLeaders waits until the running nodes agree that every
// partition of topic is led by its preferred replica (the first), where
// the nodes' rebalancing puts it; then no leadership transfer is under
// way. A transfer cut short by halting its leader leaves goroutines of
// hashicorp/raft v1.8.0 blocked forever (its leadershipTransfer), which
// the package's goleak check would report. If the leaders do not settle
// within 20s (the preferred node is down, say), it waits only for every
// partition to have a leader.
func waitPreferredLeaders(t testing.TB, c *testcluster.Cluster, topic string) {
	t.Helper()
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var parts []client.PartitionDetail // from the last good answer
	for {
		settled := true
		ds, err := adm.DescribeTopics(ctx, topic)
		if err != nil || ds[0].Err != nil || len(ds[0].Partitions) == 0 {
			settled = false
		} else {
			parts = ds[0].Partitions
			for _, p := range parts {
				if len(p.Replicas) == 0 || c.Node(int(p.Replicas[0])) == nil {
					settled = false
					break
				}
				if l, _ := c.Leader(topic, p.Partition, 5*time.Second); l != p.Replicas[0] {
					settled = false
					break
				}
			}
		}
		if settled {
			return
		}
		select {
		case <-ctx.Done():
			t.Logf("%s: leaders not all on their preferred replicas after 20s", topic)
			if len(parts) == 0 {
				t.Fatalf("%s: no metadata: %v", topic, err)
			}
			for _, p := range parts {
				if l, _ := c.Leader(topic, p.Partition, 20*time.Second); l < 0 {
					t.Fatalf("%s[%d] has no leader", topic, p.Partition)
				}
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// consumeRange reads each partition of topic from its start up to (not
// including) ends[partition] with our consumer and returns the records by
// partition, in the order Poll gave them.
func consumeRange(t testing.TB, seeds []string, topic string, ends map[int32]int64) map[int32][]*client.Record {
	t.Helper()
	assign := map[int32]client.Offset{}
	for p := range ends {
		assign[p] = client.AtStart()
	}
	c, err := client.NewConsumer(client.Brokers(seeds...), client.ConsumePartitions(map[string]map[int32]client.Offset{topic: assign}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := map[int32][]*client.Record{}
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatalf("poll %s (positions %v, want %v): %v", topic, next, ends, err)
		}
		for _, r := range recs {
			if r.Topic != topic {
				t.Fatalf("polled a record of %s", r.Topic)
			}
			if r.Offset < ends[r.Partition] {
				out[r.Partition] = append(out[r.Partition], r)
			}
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
		}
	}
	return out
}

// logEnds produces one marker record to each partition and returns the
// offsets they got: everything written before is below them.
func logEnds(t testing.TB, seeds []string, topic string, parts int32) map[int32]int64 {
	t.Helper()
	p, err := client.NewProducer(client.Brokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends := map[int32]int64{}
	for part := range parts {
		r := &client.Record{Topic: topic, Value: []byte("end"), ExplicitPartition: true, Partition: part}
		if err := p.ProduceSync(ctx, r); err != nil {
			t.Fatalf("end marker for %s[%d]: %v", topic, part, err)
		}
		ends[part] = r.Offset
	}
	return ends
}
