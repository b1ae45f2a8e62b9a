package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// canaryTopic is written to while the big topics are deleted.
const canaryTopic = "scalecheck-canary"

// deleteAndTime deletes the measured topics while a producer writes to a
// small canary topic, one record at a time: it reports how long
// DeleteTopics took to answer, until no node's Metadata names the topics,
// and until the nodes are idle again (the replicas' removal done), with
// the CPU the nodes spent on it, the longest wait for a canary
// acknowledgement, and whether the canary's leaders changed.
func deleteAndTime(ctx context.Context, o options, cl *kgo.Client, pids []int, names []string) error {
	if err := createTopic(ctx, cl, canaryTopic, 3, o.rf); err != nil {
		return err
	}
	before, err := waitLed(ctx, cl, canaryTopic, 3)
	if err != nil {
		return err
	}
	cpu0 := make([]float64, len(pids))
	for i, pid := range pids {
		cpu0[i] = cpuSeconds(pid)
	}
	pctx, stop := context.WithCancel(ctx)
	var maxGap atomic.Int64
	var acked, failed atomic.Int64
	done := make(chan struct{})
	go func() { defer close(done); produceCanary(pctx, cl, &maxGap, &acked, &failed) }()
	base := nodesCPU(pids, 2*time.Second) // the canary's own cost
	fmt.Printf("delete: the nodes use %.3f cores with the canary producing, before the delete\n", base)

	t0 := time.Now()
	res, err := kadm.NewClient(cl).DeleteTopics(ctx, names...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		stop()
		<-done
		return fmt.Errorf("delete topics: %w", err)
	}
	fmt.Printf("delete: DeleteTopics of %d partitions answered after %v\n", o.partitions, time.Since(t0).Round(time.Millisecond))
	if err := waitGone(ctx, o, names); err != nil {
		stop()
		<-done
		return err
	}
	fmt.Printf("delete: no node's Metadata names the topics %v after DeleteTopics\n", time.Since(t0).Round(time.Millisecond))
	idle := waitIdle(ctx, pids, base, t0)
	stop()
	<-done
	var spent float64
	for i, pid := range pids {
		spent += cpuSeconds(pid) - cpu0[i]
	}
	fmt.Printf("delete: nodes idle again %v after DeleteTopics (%.1f CPU seconds in all)\n", idle.Round(time.Millisecond), spent)
	after, err := allLeaders(ctx, cl, []string{canaryTopic})
	if err != nil {
		return err
	}
	changed := 0
	for k, b := range before {
		if after[k] != b {
			changed++
		}
	}
	fmt.Printf("delete: canary %d records acknowledged, %d failed, longest wait for an ack %v; %d of 3 canary partitions changed leader\n",
		acked.Load(), failed.Load(), time.Duration(maxGap.Load()).Round(time.Millisecond), changed)
	for i, pid := range pids {
		fmt.Printf("node %d (pid %d): %d open file descriptors, RSS %d MiB after the delete\n", i+1, pid, countFDs(pid), rss(pid, "VmRSS")>>20)
	}
	if failed.Load() > 0 {
		return errors.New("delete: the canary's produces failed while the topics were deleted")
	}
	return nil
}

// produceCanary produces to the canary topic one record at a time until
// ctx ends, keeping the longest time a produce took.
func produceCanary(ctx context.Context, cl *kgo.Client, maxGap, acked, failed *atomic.Int64) {
	for ctx.Err() == nil {
		start := time.Now()
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: canaryTopic, Value: []byte("canary")}).FirstErr()
		if ctx.Err() != nil {
			return
		}
		if d := int64(time.Since(start)); d > maxGap.Load() {
			maxGap.Store(d)
		}
		if err != nil {
			failed.Add(1)
			fmt.Println("delete: canary produce failed:", err)
			continue
		}
		acked.Add(1)
	}
}

// waitGone polls every node's Metadata until none names a partition of
// names.
func waitGone(ctx context.Context, o options, names []string) error {
	for {
		gone := true
		for _, b := range o.brokers {
			l, err := allLeaders(ctx, nil, names, b)
			gone = gone && err == nil && len(l) == 0
		}
		if gone {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("delete: topics still in Metadata: %w", ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// nodesCPU is the CPU the nodes used together over d, in cores.
func nodesCPU(pids []int, d time.Duration) float64 {
	var c0, c1 float64
	for _, pid := range pids {
		c0 += cpuSeconds(pid)
	}
	time.Sleep(d)
	for _, pid := range pids {
		c1 += cpuSeconds(pid)
	}
	return (c1 - c0) / d.Seconds()
}

// waitIdle waits, for at most two minutes, until the nodes use no more
// than a tenth of a core above base over a second, and returns the time
// from t0 to the start of that second.
func waitIdle(ctx context.Context, pids []int, base float64, t0 time.Time) time.Duration {
	for ctx.Err() == nil && time.Since(t0) < 2*time.Minute {
		at := time.Since(t0)
		if nodesCPU(pids, time.Second) <= base+0.1 {
			return at
		}
	}
	return time.Since(t0)
}
