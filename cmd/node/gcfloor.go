package main

import (
	"context"
	"os"
	"runtime/metrics"
	"time"
)

// The heap goal's floor (gc_min_heap). Go collects when the heap has grown
// by GOGC percent of what the last collection left live. A busy node's
// live heap is small (its Raft logs are bounded by bytes), while its
// write path allocates a few copies of every record: at 100 B records it
// collected 3-5 times as often as with a 170 MB live heap, and paid for
// it in marking, in returning pages to the OS and in faulting them back.
// The floor raises GOGC while the live heap is small so the goal stays at
// least minHeap; a live heap past minHeap/2 collects at GOGC as set.

// defaultGCMinHeap is gc_min_heap's default.
const defaultGCMinHeap = 256 << 20

// gcFloorPoll is how often the floor looks for a finished collection.
const gcFloorPoll = 200 * time.Millisecond

// maxGCPercent bounds the raised GOGC: the memory limit bounds the heap
// anyway, this keeps the goal's arithmetic far from overflow.
const maxGCPercent = 10000

// gcPercentFor is the GOGC that makes the heap goal, live*(1+GOGC/100), at
// least minHeap, and never below base.
func gcPercentFor(live, minHeap uint64, base int) int {
	live = max(live, 1)
	if minHeap <= live || (minHeap-live)*100/live <= uint64(base) {
		return base
	}
	return int(min((minHeap-live)*100/live, maxGCPercent))
}

// gcMinHeapFor is the floor in force: none when GOGC is set (it wins, as
// GOMEMLIMIT does for memory_limit), and at most a quarter of the memory
// limit so that a small container keeps its headroom.
func gcMinHeapFor(configured, limit int64) int64 {
	if _, set := os.LookupEnv("GOGC"); set || configured <= 0 {
		return 0
	}
	if limit > 0 {
		configured = min(configured, limit/4)
	}
	return configured
}

// runGCFloor keeps the heap goal at least minHeap until ctx ends, then
// restores GOGC. set is debug.SetGCPercent outside tests.
func runGCFloor(ctx context.Context, minHeap int64, set func(int) int) {
	base := set(100)
	set(base)
	if base < 0 { // GC off: nothing to raise
		return
	}
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	var cycles uint64
	current := base
	t := time.NewTicker(gcFloorPoll)
	defer t.Stop()
	defer func() { set(base) }()
	for {
		metrics.Read(samples)
		if c := samples[0].Value.Uint64(); c != cycles {
			cycles = c
			if p := gcPercentFor(samples[1].Value.Uint64(), uint64(minHeap), base); p != current {
				current = p
				set(p)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
