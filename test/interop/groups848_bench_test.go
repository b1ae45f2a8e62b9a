package interop

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

const (
	benchMembers    = 10
	benchPartitions = 20 // two per member once the group has settled
	benchHeartbeat  = 250 * time.Millisecond
)

// BenchmarkGroupRebalance10 measures how long 10 franz-go members take
// to settle in a new group, on our 3-node cluster: from the first member
// joining to every member holding its final share (2 of the topic's 20
// partitions, together all of them), with the classic protocol
// (cooperative-sticky, franz-go's default) and with KIP-848
// (kgo.ServerSideBalancer: the coordinator assigns). The members join all
// at once (at-once), or each once the previous one holds partitions, as
// in a scale-out (one-by-one). Each op is a fresh group, closed outside
// the timer.
//
//	go test -run '^$' -bench BenchmarkGroupRebalance10 -benchtime 5x -count 5 ./test/interop/
func BenchmarkGroupRebalance10(b *testing.B) {
	// Both protocols heartbeat every 250ms: franz-go's classic members
	// by their own setting, KIP-848 members at the interval the
	// coordinator gives (group.consumer.heartbeat.interval.ms).
	c := testcluster.Start(b, 3, func(cfg *broker.Config) {
		cfg.GroupConsumer.HeartbeatInterval, cfg.GroupConsumer.MinHeartbeatInterval = benchHeartbeat, benchHeartbeat
	})
	adm := kadm.NewClient(c.Client(b))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const topic = "rebalance-bench"
	if resp, err := adm.CreateTopic(ctx, benchPartitions, 3, nil, topic); err != nil || resp.Err != nil {
		b.Fatalf("create topic: %v %v", err, resp.Err)
	}
	for p := range int32(benchPartitions) {
		if leader, _ := c.Leader(topic, p, timeout); leader < 0 {
			b.Fatalf("%s/%d has no leader", topic, p)
		}
	}
	for _, join := range []string{"at-once", "one-by-one"} {
		for _, proto := range []string{"classic", "consumer"} {
			b.Run(join+"/"+proto, func(b *testing.B) {
				if proto == "consumer" {
					requireKIP848(ctx, b, adm)
				}
				n := 0
				for b.Loop() {
					n++
					group := fmt.Sprintf("bench-%s-%s-%d", join, proto, n)
					ms := settle(ctx, b, c.Seeds(), group, topic, proto == "consumer", join == "one-by-one")
					b.StopTimer()
					closeBenchMembers(ms)
					b.StartTimer()
				}
			})
		}
	}
}

// requireKIP848 fails the benchmark if the cluster does not serve
// ConsumerGroupHeartbeat v1: franz-go would quietly run classic.
func requireKIP848(ctx context.Context, b *testing.B, adm *kadm.Client) {
	b.Helper()
	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range versions.Sorted() {
		if _, maxV, ok := v.KeyVersions(68); !ok || maxV < 1 {
			b.Fatalf("broker %d does not serve ConsumerGroupHeartbeat v1 (KIP-848)", v.NodeID)
		}
	}
}

// benchMember is one member and the partitions it owns, as its callbacks
// report them.
type benchMember struct {
	cl *kgo.Client

	mu    sync.Mutex // guards owned; written by the client's callbacks
	owned []int32
}

func (m *benchMember) set(add, remove []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owned = slices.DeleteFunc(m.owned, func(p int32) bool { return slices.Contains(remove, p) })
	m.owned = append(m.owned, add...)
}

// settle starts the members of group (with staggered, each once the one
// before owns partitions) and returns once each owns two partitions and
// together they own all of topic's.
func settle(ctx context.Context, b *testing.B, seeds []string, group, topic string, serverSide, staggered bool) []*benchMember {
	ms := make([]*benchMember, benchMembers)
	for i := range ms {
		m := &benchMember{}
		opts := []kgo.Opt{
			kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.HeartbeatInterval(benchHeartbeat), kgo.SessionTimeout(10 * time.Second),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.set(ps[topic], nil) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.set(nil, ps[topic]) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.set(nil, ps[topic]) }),
		}
		if serverSide {
			opts = append(opts, kgo.ServerSideBalancer())
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		m.cl = cl
		ms[i] = m
		go func() {
			for {
				if fs := cl.PollFetches(ctx); fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
			}
		}()
		for staggered && !m.holds() {
			if ctx.Err() != nil {
				b.Fatalf("member %d of group %s never got partitions", i, group)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for !settled(ms) {
		if ctx.Err() != nil {
			b.Fatalf("group %s never settled", group)
		}
		time.Sleep(time.Millisecond)
	}
	return ms
}

func (m *benchMember) holds() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.owned) > 0
}

// settled reports whether every member owns two partitions and all the
// partitions are owned, once each.
func settled(ms []*benchMember) bool {
	var all []int32
	for _, m := range ms {
		m.mu.Lock()
		owned := slices.Clone(m.owned)
		m.mu.Unlock()
		if len(owned) != benchPartitions/benchMembers {
			return false
		}
		all = append(all, owned...)
	}
	slices.Sort(all)
	return len(slices.Compact(all)) == benchPartitions
}

// closeBenchMembers closes the members at once (each leaves the group).
func closeBenchMembers(ms []*benchMember) {
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(m.cl.Close)
	}
	wg.Wait()
}
