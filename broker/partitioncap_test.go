package broker_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// concurrently runs f(i) for i in 0..n-1 at once, each with its own
// client (a Kafka connection answers its requests in order), and returns
// the error codes.
func concurrently(t *testing.T, c *testcluster.Cluster, n int, f func(ctx context.Context, cl *kgo.Client, i int) int16) []int16 {
	t.Helper()
	clients := make([]*kgo.Client, n)
	for i := range clients {
		clients[i] = c.Client(t)
		if err := clients[i].Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	codes := make([]int16, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			codes[i] = f(ctx, clients[i], i)
		}()
	}
	close(start)
	wg.Wait()
	return codes
}

// partitionTotal is the number of partitions the node's metadata holds.
func partitionTotal(c *testcluster.Cluster) int {
	return c.Node(1).MetadataState().PartitionCount()
}

// tallyCap counts the successes and checks that every failure is
// POLICY_VIOLATION, the cap's answer.
func tallyCap(t *testing.T, codes []int16) (ok int) {
	t.Helper()
	for i, code := range codes {
		switch code {
		case 0:
			ok++
		case kerr.PolicyViolation.Code:
		default:
			t.Errorf("request %d: error %v, want none or POLICY_VIOLATION", i, kerr.ErrorForCode(code))
		}
	}
	return ok
}

// Eight concurrent CreateTopics of 10 partitions under a max_partitions of
// 20: the cap holds whatever the race, because the metadata state machine
// checks it at apply time; the creates past it get POLICY_VIOLATION with a
// message that names the limit.
func TestMaxPartitionsConcurrentCreates(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.MaxPartitions = 20 })
	var mu sync.Mutex
	var messages []string
	codes := concurrently(t, c, 8, func(ctx context.Context, cl *kgo.Client, i int) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "cap-"+string(rune('a'+i)), 10, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Errorf("CreateTopics %d: %v", i, err)
			return -1
		}
		if m := resp.Topics[0].ErrorMessage; m != nil {
			mu.Lock()
			messages = append(messages, *m)
			mu.Unlock()
		}
		return resp.Topics[0].ErrorCode
	})
	created := tallyCap(t, codes)
	if total := partitionTotal(c); total > 20 || total != 10*created {
		t.Fatalf("%d partitions after %d successful creates of 10 under a cap of 20 (codes %v)", total, created, codes)
	}
	if created != 2 {
		t.Fatalf("%d creates succeeded, want 2 (codes %v)", created, codes)
	}
	for _, m := range messages {
		if !strings.Contains(m, "more than max_partitions (20)") {
			t.Errorf("refusal message %q does not name the limit", m)
		}
	}
	if len(messages) != 6 {
		t.Errorf("%d refusal messages, want 6: %q", len(messages), messages)
	}
}

// Eight concurrent CreatePartitions, each adding 3 partitions to its own
// one-partition topic, under a max_partitions of 20 with 8 partitions
// taken: at most 4 grow.
func TestMaxPartitionsConcurrentGrowth(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.MaxPartitions = 20 })
	cl := c.Client(t)
	for i := range 8 {
		createTopic(t, cl, "grow-"+string(rune('a'+i)), 1, 1)
	}
	codes := concurrently(t, c, 8, func(ctx context.Context, cl *kgo.Client, i int) int16 {
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "grow-"+string(rune('a'+i)), 4
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Errorf("CreatePartitions %d: %v", i, err)
			return -1
		}
		return resp.Topics[0].ErrorCode
	})
	grown := tallyCap(t, codes)
	if total := partitionTotal(c); total > 20 || total != 8+3*grown {
		t.Fatalf("%d partitions after %d successful growths by 3 from 8 under a cap of 20 (codes %v)", total, grown, codes)
	}
	if grown != 4 {
		t.Fatalf("%d growths succeeded, want 4 (codes %v)", grown, codes)
	}
}

// Eight concurrent creates of 10 partitions on one node whose capacity is
// 25 partition replicas: at most 2 succeed, and the refusals name the
// capacity (max_partition_replicas_per_node).
func TestNodeReplicaCapacityConcurrentCreates(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.MaxNodeReplicas = 25 })
	var mu sync.Mutex
	var messages []string
	codes := concurrently(t, c, 8, func(ctx context.Context, cl *kgo.Client, i int) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "node-cap-"+string(rune('a'+i)), 10, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Errorf("CreateTopics %d: %v", i, err)
			return -1
		}
		if m := resp.Topics[0].ErrorMessage; m != nil {
			mu.Lock()
			messages = append(messages, *m)
			mu.Unlock()
		}
		return resp.Topics[0].ErrorCode
	})
	created := tallyCap(t, codes)
	if total := partitionTotal(c); total > 25 || total != 10*created || created != 2 {
		t.Fatalf("%d partitions after %d successful creates of 10 on a node with room for 25 (codes %v)", total, created, codes)
	}
	for _, m := range messages {
		if !strings.Contains(m, "more than max_partition_replicas_per_node (25)") {
			t.Errorf("refusal message %q does not name the capacity", m)
		}
	}
}
