package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// and until every node removed its replica directories, with the CPU the
// nodes spent meanwhile, the longest wait for a canary
// acknowledgement, and whether the canary's leaders changed.
func deleteAndTime(ctx context.Context, o options, cl *kgo.Client, pids []int, names []string) error {
	if err := createTopic(ctx, cl, canaryTopic, 3, o.rf); err != nil {
		return err
	}
	before, err := waitLed(ctx, cl, canaryTopic, 3)
	if err != nil {
		return err
	}
	if left := replicaDirs(o.pidFiles, names); slices.Max(left) == 0 {
		return fmt.Errorf("delete: no replica directory of the topics under %v (not make cluster's layout?)", o.pidFiles)
	}
	pctx, stop := context.WithCancel(ctx)
	var maxGap atomic.Int64
	var acked, failed atomic.Int64
	done := make(chan struct{})
	go func() { defer close(done); produceCanary(pctx, cl, &maxGap, &acked, &failed) }()
	cpu0 := make([]float64, len(pids))
	for i, pid := range pids {
		cpu0[i] = cpuSeconds(pid)
	}
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
	removed, err := waitRemoved(ctx, o, names, t0)
	stop()
	<-done
	if err != nil {
		return err
	}
	var spent float64
	for i, pid := range pids {
		spent += cpuSeconds(pid) - cpu0[i]
	}
	fmt.Printf("delete: every node removed its replicas %v after DeleteTopics (%.1f CPU seconds of the nodes meanwhile)\n", removed.Round(time.Millisecond), spent)
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

// replicaDirs counts, per node, the replica directories of names left in
// its partitions directory: the data directory is the pid file's name
// without ".pid" (make cluster's layout).
func replicaDirs(pidFiles, names []string) []int {
	counts := make([]int, len(pidFiles))
	for i, f := range pidFiles {
		entries, _ := os.ReadDir(filepath.Join(strings.TrimSuffix(f, ".pid"), "partitions"))
		for _, e := range entries {
			for _, n := range names {
				if strings.HasPrefix(e.Name(), n+"-") {
					counts[i]++
					break
				}
			}
		}
	}
	return counts
}

// waitRemoved waits until no node holds a replica directory of names, and
// returns the time from t0, printing the counts every 10 s.
func waitRemoved(ctx context.Context, o options, names []string, t0 time.Time) (time.Duration, error) {
	report := t0.Add(10 * time.Second)
	for {
		left := replicaDirs(o.pidFiles, names)
		if slices.Max(left) == 0 {
			return time.Since(t0), nil
		}
		if time.Now().After(report) {
			fmt.Printf("  %v: replica directories left per node %v\n", time.Since(t0).Round(time.Second), left)
			report = report.Add(10 * time.Second)
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("delete: replica directories left per node %v: %w", left, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
