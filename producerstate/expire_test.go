package producerstate

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// at is hdr with the batch's MaxTimestamp set.
func at(pid int64, seq int32, offset, ts int64) record.Header {
	h := hdr(pid, 0, seq, 1, offset)
	h.MaxTimestamp = ts
	return h
}

// TestExpireRemovesProducersIdleBeyondTheTTL: producers whose last batch is
// older than now - ttl go; the others keep their windows, and an expired
// producer's next batch must start a fresh sequence.
func TestExpireRemovesProducersIdleBeyondTheTTL(t *testing.T) {
	tab := New(DefaultWindow)
	mustAppend(t, tab, at(1, 0, 0, 1000))
	mustAppend(t, tab, at(2, 0, 1, 5000))
	mustAppend(t, tab, at(1, 1, 2, 2000)) // producer 1's last batch: 2000
	if n := tab.Expire(10_000, 0); n != 0 || tab.Len() != 2 {
		t.Fatalf("Expire with ttl 0 removed %d, left %d; want nothing removed", n, tab.Len())
	}
	if n := tab.Expire(10_000, 7_000); n != 1 {
		t.Fatalf("Expire(10000, 7000) removed %d, want 1 (producer 1, last at 2000)", n)
	}
	if _, ok := tab.Lookup(1); ok {
		t.Fatal("producer 1 is still known after expiring")
	}
	if e, ok := tab.Lookup(2); !ok || e.LastTimestamp != 5000 {
		t.Fatalf("producer 2 = %+v, %v; want kept with last timestamp 5000", e, ok)
	}
	if r := tab.Validate(at(1, 2, 3, 11_000)); r.Verdict != OutOfOrder || r.Expected != 0 {
		t.Fatalf("expired producer's next sequence: %+v, want OutOfOrder expecting 0", r)
	}
	if r := tab.Validate(at(1, 0, 3, 11_000)); r.Verdict != Append {
		t.Fatalf("expired producer starting over at 0: %+v, want Append", r)
	}
}

// TestLimitRefusesNewProducersOnly: a full table refuses a new producer's
// batch with TableFull, while known producers go on; Expire makes room.
func TestLimitRefusesNewProducersOnly(t *testing.T) {
	tab := New(DefaultWindow)
	tab.SetLimit(2)
	mustAppend(t, tab, at(1, 0, 0, 100))
	mustAppend(t, tab, at(2, 0, 1, 200))
	if r := tab.Validate(at(3, 0, 2, 300)); r.Verdict != TableFull {
		t.Fatalf("third producer: %v, want TableFull", r.Verdict)
	}
	mustAppend(t, tab, at(1, 1, 2, 300))
	tab.Expire(1000, 750) // producer 2 (last at 200) goes
	mustAppend(t, tab, at(3, 0, 3, 1000))
	if c := tab.Clone(); c.Validate(at(4, 0, 4, 1000)).Verdict != TableFull {
		t.Fatal("a clone lost the limit")
	}
}

// TestDecodeFormat1IsUntimed: a table written before last timestamps
// existed decodes with Timed false and unknown (-1) timestamps.
func TestDecodeFormat1IsUntimed(t *testing.T) {
	b := []byte{formatVersionV1, 0, 5, 0, 0, 0, 1}
	b = binary.BigEndian.AppendUint64(b, 7) // producer 7
	b = append(b, 0, 0, 0, 1)               // epoch 0, one batch
	b = binary.BigEndian.AppendUint32(b, 0) // first sequence
	b = binary.BigEndian.AppendUint32(b, 0) // last sequence
	b = binary.BigEndian.AppendUint64(b, 42)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	tab, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(format 1): %v", err)
	}
	if tab.Timed() {
		t.Fatal("a format-1 table claims timestamps")
	}
	if e, ok := tab.Lookup(7); !ok || e.LastTimestamp != -1 || e.Batches[0].BaseOffset != 42 {
		t.Fatalf("producer 7 = %+v, %v", e, ok)
	}
	if !New(DefaultWindow).Timed() {
		t.Fatal("a new table is not timed")
	}
}
