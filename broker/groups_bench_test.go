package broker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// BenchmarkOffsetCommit measures one OffsetCommit's latency on a 3-node
// cluster while four other groups commit without pause, and reports its
// p50 and p99 (the aim: p99 <= 20 ms). A commit is answered once its
// record is committed through the coordinator partition's Raft log, so
// the baseline, measured in the same run under the same load, is a
// one-record acks=all Produce to a partition of the same shape. One of
// the four groups ("load-3") shares the coordinator partition of "bench"
// (partition 0 of 4); the baseline's partition gets one producer without
// pause likewise.
func BenchmarkOffsetCommit(b *testing.B) {
	c := testcluster.Start(b, 3)
	cl := c.Client(b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(b, cl, "commits", 4, 3)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	commit := func(group string, at int64) error {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "commits", Partition: int32(at % 4), At: at, LeaderEpoch: -1})
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		resp, err := adm.CommitOffsets(cctx, group, os)
		if err == nil {
			err = resp.Error()
		}
		return err
	}
	for _, g := range []string{"bench", "load-0", "load-1", "load-2", "load-3"} {
		eventually(b, 30*time.Second, "coordinator of "+g+" ready", func() bool { return commit(g, 0) == nil })
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for at := int64(1); ctx.Err() == nil; at++ {
				commit(fmt.Sprintf("load-%d", i), at)
			}
		}()
	}
	at := int64(1)
	b.Run("commit", func(b *testing.B) {
		latencies(b, func() error { at++; return commit("bench", at) })
	})
	b.Run("produce-baseline", func(b *testing.B) {
		pctx, pcancel := context.WithCancel(ctx)
		// Its own client, so that kgo does not put both records in one batch.
		loadCl := c.Client(b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		var load sync.WaitGroup
		defer load.Wait()
		defer pcancel()
		load.Add(1)
		go func() { // the producer sharing the partition, as load-3 shares the commits'
			defer load.Done()
			for pctx.Err() == nil {
				loadCl.ProduceSync(pctx, &kgo.Record{Topic: "commits", Partition: 0, Value: []byte("load")})
			}
		}()
		latencies(b, func() error {
			return cl.ProduceSync(ctx, &kgo.Record{Topic: "commits", Partition: 0, Value: []byte("x")}).FirstErr()
		})
	})
}

// latencies runs op in b.Loop and reports its p50 and p99.
func latencies(b *testing.B, op func() error) {
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkGroupRebalance10 has 10 kgo members join one new group of a
// 10-partition topic and measures the time from the last member's start
// to every member holding its partition (the aim: <= 1 s plus the
// initial rebalance delay, 0 here).
func BenchmarkGroupRebalance10(b *testing.B) {
	c := testcluster.Start(b, 3)
	cl := c.Client(b)
	createTopic(b, cl, "ten", 10, 3)
	round := 0
	var total time.Duration
	for b.Loop() {
		round++
		total += rebalanceOnce(b, c, fmt.Sprintf("reb-%d", round))
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(round), "ms/rebalance")
}

// rebalanceOnce starts 10 members of group and returns the time from the
// last start until each holds exactly one partition.
func rebalanceOnce(b *testing.B, c *testcluster.Cluster, group string) time.Duration {
	var mu sync.Mutex // guards owned
	owned := map[int]map[int32]bool{}
	done := make(chan struct{})
	var once sync.Once
	check := func() { // call with mu held
		n := 0
		for _, ps := range owned {
			if len(ps) != 1 {
				return
			}
			n++
		}
		if n == 10 {
			once.Do(func() { close(done) })
		}
	}
	var clients []*kgo.Client
	var polls sync.WaitGroup // each member's poll, which returns when it is closed
	defer func() {
		for _, m := range clients {
			m.Close()
		}
		polls.Wait()
	}()
	var last time.Time
	for i := range 10 {
		mu.Lock()
		owned[i] = map[int32]bool{}
		mu.Unlock()
		update := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
			return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range ps["ten"] {
					if add {
						owned[i][p] = true
					} else {
						delete(owned[i], p)
					}
				}
				check()
			}
		}
		m, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics("ten"),
			kgo.OnPartitionsAssigned(update(true)), kgo.OnPartitionsRevoked(update(false)), kgo.OnPartitionsLost(update(false)))
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, m)
		last = time.Now()
		polls.Add(1)
		go func() { // kgo joins when polled
			defer polls.Done()
			m.PollFetches(context.Background())
		}()
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatalf("%s: members did not all get a partition", group)
	}
	return time.Since(last)
}
