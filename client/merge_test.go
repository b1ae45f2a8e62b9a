package client

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// While MaxInFlight requests are out, batches that close on the same
// partition join the one waiting to be sent, up to MaxBatchBytes; when a
// slot frees, that one batch goes. Order, offsets and results are as if
// each had gone alone.
func TestWaitingBatchAbsorbsLaterOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		// Each record is 39+0+1 = 40 estimated bytes: a batch per record,
		// and room for 3 records in a merged batch.
		p := fakeProducer(t, f, BatchSize(1), MaxBatchBytes(120), Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		warm(t, p)
		f.hold()
		var res []result
		for i := range 12 {
			r := rec("events", "", fmt.Sprint(i%10))
			r.ExplicitPartition = true
			if err := p.Produce(t.Context(), r, collector(&res)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the sender takes each batch while a slot is free
		}
		if got := f.producesReceived(); got != 1+5 {
			t.Fatalf("%d produce requests reached the broker, want 5 in flight", got-1)
		}
		before := f.batchCount("events", 0)
		f.release()
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(res) != 12 {
			t.Fatalf("%d results, want 12", len(res))
		}
		for i, r := range res {
			if r.err != nil || r.r.Offset != int64(1+i) || string(r.r.Value) != fmt.Sprint(i%10) {
				t.Fatalf("result %d: value %s offset %d err %v", i, r.r.Value, r.r.Offset, r.err)
			}
		}
		// The 5 in flight were stored after the hold began; the 7 records
		// closed one by one while no slot was free merged into batches of
		// at most 3 records (120 bytes): 5 + 3 batches, not 5 + 7.
		if got := f.batchCount("events", 0) - before; got != 5+3 {
			t.Fatalf("%d batches stored, want 8 (5 in flight + 7 records merged into 3)", got)
		}
	})
}

func TestMaxBatchBytesBelowBatchSizeIsRejected(t *testing.T) {
	_, err := NewProducer(Brokers("127.0.0.1:1"), BatchSize(4096), MaxBatchBytes(1024))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Option != "MaxBatchBytes" {
		t.Fatalf("NewProducer = %v, want a ConfigError naming MaxBatchBytes", err)
	}
	// Raising BatchSize alone raises the cap with it.
	p, err := NewProducer(Brokers("127.0.0.1:1"), BatchSize(4<<20))
	if err != nil {
		t.Fatalf("BatchSize above the default MaxBatchBytes: %v", err)
	}
	p.Close(t.Context())
}
