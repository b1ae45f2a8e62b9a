package client

import (
	"bytes"
	"testing"
	"testing/synctest"
	"time"
)

// With the default options, a steady load well below what one request can
// carry is sent as one batch per partition per Linger, not as one batch
// per 16 KiB: every request is a Raft entry on our broker, and an open-loop
// producer that sent a request per 16 records of 1 KiB made the broker
// spend its CPU on request overhead and fall behind.
func TestSteadyLoadSendsOneBatchPerLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		p := fakeProducer(t, f) // default BatchSize and Linger (5ms)
		warm(t, p)
		before := f.batchCount("events", 0)
		value := bytes.Repeat([]byte("x"), 1024)
		// 10,000 records/s of 1 KiB for 100ms: 1000 records, 1 MiB.
		for range 1000 {
			r := &Record{Topic: "events", Value: value, ExplicitPartition: true}
			if err := p.Produce(t.Context(), r, nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Microsecond)
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		// 50 records per 5ms linger: 20 batches (one more if the last
		// linger is cut by Flush). At 16 KiB per batch it would be 66.
		if got := f.batchCount("events", 0) - before; got < 20 || got > 21 {
			t.Fatalf("%d batches for 100ms of steady load, want 20 or 21 (one per linger)", got)
		}
	})
}

// A batch is encoded into one buffer sized from its records' estimate: no
// growing by doubling, which for a MiB batch copied and allocated about
// twice its size.
func TestBuildAllocatesTheBatchOnce(t *testing.T) {
	p := &Producer{cfg: &config{compression: NoCompression}}
	value := bytes.Repeat([]byte("x"), 1024)
	b := &batch{}
	for range 1000 {
		r := &Record{Value: value, Headers: []RecordHeader{{Key: "k", Value: []byte("v")}}}
		b.recs = append(b.recs, pendingRec{r: r, size: r.estimatedSize()})
	}
	var wire []byte
	allocs := testing.AllocsPerRun(3, func() {
		var err error
		if wire, err = p.build(b); err != nil {
			t.Fatal(err)
		}
	})
	// The records' slice, each record's header slice, the buffer (unless
	// the pool had one), and the pool's own per-P array, which it makes
	// again after a collection. Growing by doubling would make ten more.
	if want := float64(1 + len(b.recs) + 2); allocs > want {
		t.Fatalf("build made %.0f allocations, want at most %.0f", allocs, want)
	}
	if len(wire) < 1000*1024 {
		t.Fatalf("batch of %d bytes", len(wire))
	}
}
