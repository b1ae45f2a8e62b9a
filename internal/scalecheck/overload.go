package main

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// pauseEach overloads the cluster on purpose: it stops each node in turn
// with SIGSTOP for d and continues it (the others must take over the
// stopped node's leaderships, then it must catch up), then times until
// every node's Metadata answer names a leader for every partition again,
// and reports whether every node survived and its peak RSS.
func pauseEach(ctx context.Context, o options, pids []int, names []string, want int) error {
	for i, pid := range pids {
		fmt.Printf("SIGSTOP node %d (pid %d) for %v\n", i+1, pid, o.pause)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("SIGSTOP node %d: %w", i+1, err)
		}
		select {
		case <-time.After(o.pause):
		case <-ctx.Done():
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return fmt.Errorf("SIGCONT node %d: %w", i+1, err)
		}
	}
	resumed := time.Now()
	report := resumed.Add(10 * time.Second)
	for {
		led, lowest := everyNodeLeads(ctx, o, names)
		if led {
			fmt.Printf("overload: every node's Metadata names a leader for all %d partitions %v after the last SIGCONT\n",
				want, time.Since(resumed).Round(time.Millisecond))
			break
		}
		if time.Now().After(report) {
			fmt.Printf("  %v after the last SIGCONT: the node that sees fewest leaders sees %d of %d\n",
				time.Since(resumed).Round(time.Second), lowest, want)
			report = report.Add(10 * time.Second)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("overload: partitions still without a leader %v after the last SIGCONT: %w", time.Since(resumed), ctx.Err())
		}
		time.Sleep(500 * time.Millisecond)
	}
	for i, pid := range pids {
		alive := syscall.Kill(pid, 0) == nil
		fmt.Printf("node %d (pid %d): alive %v, RSS %d MiB, peak RSS %d MiB\n", i+1, pid, alive, rss(pid, "VmRSS")>>20, rss(pid, "VmHWM")>>20)
		if !alive {
			return fmt.Errorf("node %d did not survive the overload", i+1)
		}
	}
	return nil
}

// everyNodeLeads asks each node on its own for the partitions' leaders:
// true when every node names a leader for every partition; lowest is the
// fewest led partitions a node names.
func everyNodeLeads(ctx context.Context, o options, names []string) (bool, int) {
	lowest := -1
	all := true
	for _, b := range o.brokers {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := allLeaders(qctx, nil, names, b)
		cancel()
		n := len(l)
		if err != nil {
			n = 0
		}
		if lowest < 0 || n < lowest {
			lowest = n
		}
		if err != nil || n < o.partitions {
			all = false
		}
	}
	return all, lowest
}
