package interop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoClient is franz-go: an idempotent producer, and a group consumer with
// its default cooperative-sticky balancer and manual commits.
func kgoClient() groupClient {
	return groupClient{
		name: "franz-go",
		produce: func(t *testing.T, seeds []string, topic string, recs []record) []record {
			t.Helper()
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var krs []*kgo.Record
			for _, r := range recs {
				krs = append(krs, &kgo.Record{Topic: topic, Partition: r.Partition, Value: []byte(r.Value)})
			}
			var out []record
			for _, res := range cl.ProduceSync(testContext(t), krs...) {
				if res.Err != nil {
					t.Fatalf("franz-go produces: %v", res.Err)
				}
				out = append(out, record{res.Record.Partition, res.Record.Offset, string(res.Record.Value)})
			}
			return out
		},
		join: func(t *testing.T, seeds []string, group, topic string) *member {
			t.Helper()
			m := &member{}
			cl, err := kgo.NewClient(
				kgo.SeedBrokers(seeds...),
				kgo.ConsumerGroup(group),
				kgo.ConsumeTopics(topic),
				kgo.DisableAutoCommit(),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.SessionTimeout(6*time.Second),
				kgo.HeartbeatInterval(500*time.Millisecond),
				kgo.FetchMaxWait(250*time.Millisecond),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.log.add(ps[topic]) }),
				kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.log.revoke(ps[topic]) }),
				kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.log.revoke(ps[topic]) }),
			)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					fetches := cl.PollFetches(ctx)
					if ctx.Err() != nil || fetches.IsClientClosed() {
						return
					}
					fetches.EachError(func(topic string, p int32, err error) {
						m.log.fail(fmt.Errorf("fetch %s/%d: %w", topic, p, err))
					})
					fetches.EachRecord(func(r *kgo.Record) { m.log.deliver(record{r.Partition, r.Offset, string(r.Value)}) })
				}
			}()
			m.commit = func(ctx context.Context) error { return cl.CommitUncommittedOffsets(ctx) }
			m.close = sync.OnceValue(func() error {
				cancel()
				<-done
				cl.Close() // leaves the group
				return nil
			})
			t.Cleanup(func() { m.close() })
			return m
		},
	}
}
