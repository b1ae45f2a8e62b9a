package main

import (
	"errors"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/report"
)

func TestOptionsDefaultsAndQuick(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.warmup != 3*time.Second || o.duration != 12*time.Second || o.windowBytes != 4<<20 ||
		!slices.Equal(o.sizes, []int{1024, 100}) || !slices.Equal(o.systems, report.SystemOrder) || !o.halfLoad ||
		!slices.Equal(o.partitions, []int{1}) || !maps.Equal(o.cachedConfigs, map[string]string{"write.caching": "true"}) {
		t.Fatalf("defaults %+v", o)
	}
	if o.clusterWarmup != 20*time.Second {
		t.Fatalf("cluster warm-up %v, want 20s", o.clusterWarmup)
	}
	if o.runs() != 7*2*2 || o.txnProducers != 0 || o.logStore() != "pebble, the default" {
		t.Fatalf("runs %d, log store %q", o.runs(), o.logStore())
	}
	if o.window(1024) != 4096 || o.window(100) != 41943 || o.window(8<<20) != 1 {
		t.Fatalf("windows %d %d %d", o.window(1024), o.window(100), o.window(8<<20))
	}
	q, err := parseOptions([]string{"--quick", "--duration", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if q.warmup != 500*time.Millisecond || q.duration != 2*time.Second || q.windowBytes != 1<<20 ||
		!slices.Equal(q.nodeArgs, []string{"--leader-rebalance-interval", "1s"}) {
		t.Fatalf("quick with explicit duration: %+v", q)
	}
	if q.clusterWarmup != 0 {
		t.Fatalf("quick: cluster warm-up %v, want none", q.clusterWarmup)
	}
	if q, err = parseOptions([]string{"--quick", "--cluster-warmup", "5s"}, io.Discard); err != nil || q.clusterWarmup != 5*time.Second {
		t.Fatalf("quick with explicit cluster warm-up: %v, %v", q.clusterWarmup, err)
	}
}

// franz-txn runs as many clients as the window holds transactions of 100
// records for, at most as asked (64 by default), and at least one.
func TestTxnProducers(t *testing.T) {
	for _, c := range []struct{ asked, window, want int }{
		{0, 4096, 40}, {0, 1024, 10}, {0, 41943, 64}, {0, 50, 1}, {16, 1024, 10}, {4, 4096, 4},
	} {
		if got := txnProducers(c.asked, c.window); got != c.want {
			t.Errorf("txnProducers(%d, %d) = %d, want %d", c.asked, c.window, got, c.want)
		}
	}
}

func TestOptionsSelection(t *testing.T) {
	o, err := parseOptions([]string{"--systems", "js-default,ours", "--sizes", "100,100,512", "--node-args", "--a 1  --b 2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// Systems keep the report's order, whatever order the flag gave.
	if !slices.Equal(o.systems, []string{report.Ours, report.JSDefault}) || !slices.Equal(o.sizes, []int{100, 512}) {
		t.Fatalf("systems %v sizes %v", o.systems, o.sizes)
	}
	if !o.has(report.Ours) || o.has(report.Franz) || !slices.Equal(o.nodeArgs, []string{"--a", "1", "--b", "2"}) {
		t.Fatalf("has/nodeArgs %+v", o)
	}
	if len(o.ourOpts()) != 0 {
		t.Fatal("no client option asked for, some given")
	}
	o, err = parseOptions([]string{"--partitions", "12, 1,12", "--half-load=false", "--systems", "ours-cached",
		"--cached-topic-configs", "flush.ms=1000, min.insync.replicas=2", "--node-args", "--raft-log-store pebble --debug-addr 127.0.0.1:606{id}"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.partitions, []int{1, 12}) || o.runs() != 1*2*2 || o.logStore() != "pebble" {
		t.Fatalf("partitions %v runs %d store %q", o.partitions, o.runs(), o.logStore())
	}
	if want := map[string]string{"write.caching": "true", "flush.ms": "1000", "min.insync.replicas": "2"}; !maps.Equal(o.cachedConfigs, want) {
		t.Fatalf("cached configs %v, want %v", o.cachedConfigs, want)
	}
	if o, _ := parseOptions([]string{"--node-args", "--raft-log-store=wal"}, io.Discard); o.logStore() != "wal" {
		t.Fatalf("--raft-log-store=wal: %q", o.logStore())
	}
	o, err = parseOptions([]string{"--our-batch-size", "65536", "--our-linger", "1ms"}, io.Discard)
	if err != nil || len(o.ourOpts()) != 2 {
		t.Fatalf("client options: %v %d", err, len(o.ourOpts()))
	}
}

func TestOptionsRejectBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--sizes", "0"}, {"--sizes", "abc"}, {"--systems", "kafka"}, {"--partitions", "0"}, {"--partitions", "1,x"},
		{"--cached-topic-configs", "flush.ms"}, {"--cached-topic-configs", "write.caching=false"}, {"--cached-topic-configs", "=1"},
		{"--duration", "0s"}, {"--cluster-warmup", "-1s"}, {"--rate", "-1"}, {"--window-bytes", "0"}, {"--our-batch-size", "-1"}, {"--txn-producers", "-1"},
		{"stray"}, {"--no-such-flag"},
	} {
		if _, err := parseOptions(args, io.Discard); !errors.Is(err, errFlags) {
			t.Errorf("%v: err %v, want errFlags", args, err)
		}
	}
}
