package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// killAndTime kills node o.kill and times, for each partition it led, the
// first acknowledged produce after the kill. The victim's peak RSS goes to
// peaks just before the kill.
func killAndTime(ctx context.Context, o options, pids []int, names []string, peaks *peakRSS) error {
	victim := int32(o.kill)
	leaders, err := allLeaders(ctx, nil, names, o.brokers...)
	if err != nil {
		return err
	}
	led := ledBy(leaders, victim)
	var seeds []string
	for i, b := range o.brokers {
		if i+1 != o.kill {
			seeds = append(seeds, b)
		}
	}
	pr, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		kgo.MetadataMinAge(pollEvery(len(led))),
		kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		return err
	}
	defer pr.Close()
	fmt.Printf("killing node %d (pid %d) with SIGKILL; it leads %d partitions\n", o.kill, pids[o.kill-1], len(led))
	peaks.noteBeforeKill(o.kill - 1)
	if err := syscall.Kill(pids[o.kill-1], syscall.SIGKILL); err != nil {
		return err
	}
	t0 := time.Now()
	nodeSide := make(chan time.Duration, 1)
	var acked atomic.Int64
	go func() { nodeSide <- timeNewLeaders(ctx, seeds, names, led, leaders, victim, t0, &acked) }()
	times, fails := produceToEach(ctx, pr, led, t0, &acked)

	slices.Sort(times)
	if len(times) > 0 {
		fmt.Printf("failover: %d/%d partitions accepted a produce; first %v median %v p90 %v max %v\n",
			len(times), len(led), times[0].Round(time.Millisecond), times[len(times)/2].Round(time.Millisecond),
			times[len(times)*9/10].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	}
	if d := <-nodeSide; d >= 0 {
		fmt.Printf("node side: every one of them led by another node in a survivor's Metadata after %v\n", d.Round(time.Millisecond))
	}
	if len(fails) > 0 {
		for _, err := range fails[:min(len(fails), 5)] {
			fmt.Println("produce failed:", err)
		}
		return fmt.Errorf("%d of %d partitions of the killed node did not accept a produce", len(fails), len(led))
	}
	return nil
}

// ledBy returns the partitions node leads, sorted.
func ledBy(leaders map[tp]leaderInfo, node int32) []tp {
	var led []tp
	for k, l := range leaders {
		if l.leader == node {
			led = append(led, k)
		}
	}
	slices.SortFunc(led, func(a, b tp) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.part - b.part)
	})
	return led
}

// timeNewLeaders polls a survivor's Metadata until it names a new leader
// (another node, a higher epoch) for every partition in led, and returns
// the time since t0; -1 if ctx ends first or no client could be made.
// For thousands of partitions it prints its progress every 2 s, with the
// produces acknowledged so far, so that the tail shows whether the new
// leaders are late to be elected or late to be named in Metadata.
func timeNewLeaders(ctx context.Context, seeds, names []string, led []tp, old map[tp]leaderInfo, victim int32, t0 time.Time, acked *atomic.Int64) time.Duration {
	md, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return -1
	}
	defer md.Close()
	next := 2 * time.Second
	for ctx.Err() == nil {
		now, err := allLeaders(ctx, md, names)
		if err == nil {
			moved := 0
			for _, k := range led {
				if l, ok := now[k]; ok && l.leader != victim && l.epoch > old[k].epoch {
					moved++
				}
			}
			if moved == len(led) {
				return time.Since(t0)
			}
			if d := time.Since(t0); len(led) > 1000 && d >= next {
				fmt.Printf("  after %v: %d/%d led anew in Metadata, %d produces acknowledged\n",
					d.Round(100*time.Millisecond), moved, len(led), acked.Load())
				next += 2 * time.Second
			}
		}
		time.Sleep(pollEvery(len(led)))
	}
	return -1
}

// pollEvery is how often the checker asks for Metadata while it times a
// fail-over of n partitions: every 20 ms for a few, every 250 ms for
// thousands, whose answers (the whole topic) would otherwise load the
// nodes being measured.
func pollEvery(n int) time.Duration {
	if n > 1000 {
		return 250 * time.Millisecond
	}
	return 20 * time.Millisecond
}

// produceToEach produces one record to each partition in led and waits for
// every result: the times since t0 of those acknowledged, and the errors.
func produceToEach(ctx context.Context, pr *kgo.Client, led []tp, t0 time.Time, acked *atomic.Int64) ([]time.Duration, []error) {
	var (
		mu    sync.Mutex
		times []time.Duration
		fails []error
		wg    sync.WaitGroup
	)
	for _, p := range led {
		wg.Add(1)
		pr.Produce(ctx, &kgo.Record{Topic: p.topic, Partition: p.part, Value: []byte("scalecheck")}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fails = append(fails, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, err))
				return
			}
			times = append(times, time.Since(t0))
			acked.Add(1)
		})
	}
	wg.Wait()
	return times, fails
}
