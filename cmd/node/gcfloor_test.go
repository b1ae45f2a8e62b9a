package main

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live, minHeap uint64
		base, want    int
	}{
		{live: 32 << 20, minHeap: 256 << 20, base: 100, want: 700},   // goal 32 MiB * 8 = 256 MiB
		{live: 128 << 20, minHeap: 256 << 20, base: 100, want: 100},  // GOGC 100 already reaches it
		{live: 512 << 20, minHeap: 256 << 20, base: 100, want: 100},  // past the floor
		{live: 100 << 20, minHeap: 256 << 20, base: 200, want: 200},  // a higher GOGC stays
		{live: 0, minHeap: 256 << 20, base: 100, want: maxGCPercent}, // bounded
	} {
		if got := gcPercentFor(c.live, c.minHeap, c.base); got != c.want {
			t.Errorf("gcPercentFor(live %d, floor %d, base %d) = %d, want %d", c.live, c.minHeap, c.base, got, c.want)
		}
	}
}

func TestGCMinHeapFor(t *testing.T) {
	t.Setenv("GOGC", "")
	if got := gcMinHeapFor(256<<20, 8<<30); got != 0 {
		t.Errorf("with GOGC set the floor is %d, want 0 (GOGC wins)", got)
	}
	_ = os.Unsetenv("GOGC") // t.Setenv above puts it back after the test
	if got := gcMinHeapFor(256<<20, 8<<30); got != 256<<20 {
		t.Errorf("floor = %d, want the configured 256 MiB", got)
	}
	if got := gcMinHeapFor(256<<20, 512<<20); got != 128<<20 {
		t.Errorf("floor under a 512 MiB memory limit = %d, want a quarter of it", got)
	}
	if got := gcMinHeapFor(0, 8<<30); got != 0 {
		t.Errorf("gc_min_heap 0 gives a floor of %d, want none", got)
	}
}

// The floor raises the runtime's heap goal to the configured bytes while
// little is live, and puts GOGC back when it stops.
func TestGCFloorRaisesTheHeapGoal(t *testing.T) {
	const floor = 64 << 20
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	goal := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	runtime.GC()
	if g := goal(); g >= floor {
		t.Skipf("the test binary's heap goal is already %d bytes", g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runGCFloor(ctx, floor, debug.SetGCPercent) }()
	deadline := time.Now().Add(10 * time.Second)
	for goal() < floor*9/10 {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("heap goal %d bytes 10s after the floor started, want about %d", goal(), floor)
		}
		runtime.GC()
		time.Sleep(gcFloorPoll)
	}
	cancel()
	<-done
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("GOGC after the floor stopped = %d, want 100 back", p)
	}
}

func TestGCMinHeapKey(t *testing.T) {
	o, err := loadConfig(nil, env(), io.Discard)
	if err != nil || o.GCMinHeap != defaultGCMinHeap {
		t.Fatalf("default gc_min_heap: %d, %v; want %d", o.GCMinHeap, err, defaultGCMinHeap)
	}
	_, err = loadConfig([]string{"--gc-min-heap", "-1"}, env(), io.Discard)
	var ce *broker.ConfigError
	if !errors.As(err, &ce) || ce.Key != "gc_min_heap" {
		t.Fatalf("--gc-min-heap -1: %v, want a config error naming gc_min_heap", err)
	}
}
