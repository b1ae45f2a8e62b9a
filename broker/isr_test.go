package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// TestIdlePartitionsStayInSync: on a healthy cluster gone idle, every
// node's Metadata keeps every partition's ISR full, long after the
// followers went quiet and stopped answering (quiescence): silence that
// the transport vouches for is not lag. A follower whose quiescence the
// leader's bookkeeping lost dropped out of the ISR for good.
func TestIdlePartitionsStayInSync(t *testing.T) {
	t.Parallel()
	const lag = 300 * time.Millisecond
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.Tuning.ReplicaLagMax = lag })
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic, parts = "idle-isr", 12
	createTopic(t, cl, topic, parts, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for p := range int32(parts) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "every node to show every ISR full", func() bool {
		return len(shortISRs(t, ctx, cl, topic, parts)) == 0
	})
	for range 10 {
		time.Sleep(lag)
		if short := shortISRs(t, ctx, cl, topic, parts); len(short) > 0 {
			t.Fatalf("idle partitions out of sync: %v", short)
		}
	}
}

// shortISRs asks each node's Metadata for topic, of parts partitions, and
// lists the partitions whose ISR lacks a replica, or that have no leader,
// in its answer.
func shortISRs(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, parts int) []string {
	t.Helper()
	var short []string
	for node := range int32(3) {
		resp, err := topicMetadata(ctx, cl.Broker(int(node+1)), topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 || len(rt.Partitions) != parts {
				short = append(short, fmt.Sprintf("node %d: error %d, %d partitions", node+1, rt.ErrorCode, len(rt.Partitions)))
			}
			for _, p := range rt.Partitions {
				if p.Leader < 0 || !sameMembers(p.ISR, p.Replicas) {
					short = append(short, fmt.Sprintf("node %d: %s-%d leader %d ISR %v of %v",
						node+1, topic, p.Partition, p.Leader, p.ISR, p.Replicas))
				}
			}
		}
	}
	return short
}

func sameMembers(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
