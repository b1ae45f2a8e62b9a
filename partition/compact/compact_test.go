package compact

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/producerstate"
	"github.com/minikafka/minikafka-go/record"
)

// logBuilder appends batches at consecutive offsets.
type logBuilder struct {
	t    *testing.T
	log  []byte
	next int64
}

type kv struct{ key, value string } // value "" is a tombstone; key "" no key

func (l *logBuilder) batch(opts record.BatchOptions, kvs ...kv) int64 {
	l.t.Helper()
	recs := make([]record.Record, len(kvs))
	for i, e := range kvs {
		recs[i].Timestamp = 1000 + l.next + int64(i)
		if e.key != "" {
			recs[i].Key = []byte(e.key)
		}
		if e.value != "" {
			recs[i].Value = []byte(e.value)
		}
	}
	start := len(l.log)
	var err error
	if l.log, err = record.AppendBatch(l.log, opts, recs); err != nil {
		l.t.Fatal(err)
	}
	record.SetBaseOffset(l.log[start:], l.next)
	record.FinishBatch(l.log[start:])
	base := l.next
	l.next += int64(len(kvs))
	return base
}

func (l *logBuilder) marker(pid int64, typ record.ControlType) int64 {
	start := len(l.log)
	l.log = record.AppendEndTxnMarker(l.log, pid, 0, 5000, record.EndTxnMarker{Type: typ})
	record.SetBaseOffset(l.log[start:], l.next)
	record.FinishBatch(l.log[start:])
	l.next++
	return l.next - 1
}

var clientDecompressor = kgo.DefaultDecompressor()

// read returns every record of log, checking each batch and that the
// batches span one contiguous run of offsets from 0. A compressed batch's
// body must also decompress with a client's decompressor (franz-go's).
func read(t *testing.T, log []byte) []record.Record {
	t.Helper()
	var out []record.Record
	next := int64(0)
	for b, err := range record.Batches(log) {
		if err == nil {
			_, err = record.Check(b)
		}
		if err != nil {
			t.Fatal(err)
		}
		h, _ := record.ParseHeader(b)
		if c := h.Compression(); c != record.CompressionNone {
			if _, err := clientDecompressor.Decompress(b[record.HeaderSize:h.Size()], kgo.CompressionCodecType(c)); err != nil {
				t.Fatalf("franz-go cannot decompress the %s batch at %d (%d records): %v", record.CodecName(c), h.BaseOffset, h.NumRecords, err)
			}
		}
		if h.BaseOffset != next {
			t.Fatalf("a batch at offset %d after one that ended at %d", h.BaseOffset, next)
		}
		next = h.NextOffset()
		if h.IsControl() {
			continue
		}
		if out, err = record.AppendRecords(out, b); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The scenario at the batch level: 200 keys of 10 versions each
// in batches of 7 of mixed codecs, then tombstones for 20 keys. Cleaning
// keeps the latest version of each key at its offset, the tombstones until
// delete.retention.ms after the cleaning that first reached them, and the
// offsets after the log unchanged.
func TestLatestVersionPerKey(t *testing.T) {
	l := &logBuilder{t: t}
	var pending []kv
	flush := func() {
		if len(pending) > 0 {
			l.batch(record.PlainBatch(int(l.next/7)%5), pending...)
			pending = nil
		}
	}
	for v := range 10 {
		for k := range 200 {
			if pending = append(pending, kv{fmt.Sprintf("k%03d", k), fmt.Sprintf("v%d", v)}); len(pending) == 7 {
				flush()
			}
		}
	}
	for k := range 20 {
		pending = append(pending, kv{fmt.Sprintf("k%03d", k*10), ""})
	}
	flush()
	end := l.next

	// A first cleaning at 1000 sets the horizon to 1500; one at 1499 keeps
	// the tombstones, one at 1500 removes them.
	first, _, err := CleanAll(nil, record.Batches(l.log), Params{NowMs: 1000, DeleteRetentionMs: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		now        int64
		tombstones int
	}{{1499, 20}, {1500, 0}} {
		out, st, err := CleanAll(nil, record.Batches(first), Params{NowMs: c.now, DeleteRetentionMs: 500})
		if err != nil {
			t.Fatal(err)
		}
		recs := read(t, out)
		live, dead := 0, 0
		last := int64(-1)
		for _, r := range recs {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			if r.Value == nil {
				dead++
				continue
			}
			live++
			if string(r.Value) != "v9" {
				t.Fatalf("key %s kept %s, want v9", r.Key, r.Value)
			}
		}
		if live != 180 || dead != c.tombstones || st.TombstonesRemoved != 20-c.tombstones {
			t.Fatalf("cleaning at %d: %d live, %d tombstones (removed %d); want 180, %d", c.now, live, dead, st.TombstonesRemoved, c.tombstones)
		}
		var lastBatch record.Header
		for b := range record.Batches(out) {
			lastBatch, _ = record.ParseHeader(b)
		}
		if lastBatch.NextOffset() != end && c.tombstones > 0 {
			t.Fatalf("the log ends at %d after cleaning, want %d", lastBatch.NextOffset(), end)
		}
	}
}

// Cleaning is a function of its input: the same bytes twice, and cleaning
// the result again changes nothing.
func TestCleanIsDeterministicAndIdempotent(t *testing.T) {
	l := &logBuilder{t: t}
	for i := range 300 {
		l.batch(record.PlainBatch(i%5), kv{fmt.Sprintf("k%d", i%17), fmt.Sprint(i)}, kv{fmt.Sprintf("k%d", i%5), ""})
	}
	p := Params{NowMs: 1000, DeleteRetentionMs: 100}
	a, _, err := CleanAll(nil, record.Batches(l.log), p)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := CleanAll(nil, record.Batches(l.log), p)
	c, st, _ := CleanAll(nil, record.Batches(a), p)
	read(t, a)
	if !bytes.Equal(a, b) || !bytes.Equal(a, c) {
		t.Fatalf("cleanings differ: %d, %d and %d bytes (again: %+v)", len(a), len(b), len(c), st)
	}
	gaps, kept := 0, 0
	prevGap := false
	for b := range record.Batches(a) {
		h, _ := record.ParseHeader(b)
		isGap := h.NumRecords == 0 && !h.Idempotent()
		if isGap && prevGap {
			t.Fatalf("two gaps in a row at %d", h.BaseOffset)
		}
		if isGap {
			gaps++
		} else {
			kept++
		}
		prevGap = isGap
	}
	if gaps > kept+1 {
		t.Fatalf("%d gaps around %d kept batches", gaps, kept)
	}
	if len(a) >= len(l.log)/10 {
		t.Fatalf("cleaned %d bytes of %d: too little went", len(a), len(l.log))
	}
}

// An aborted transaction's records go, a committed one's stay, markers
// stay; keyless records stay.
func TestAbortedAndKeyless(t *testing.T) {
	l := &logBuilder{t: t}
	txn := func(pid int64) record.BatchOptions {
		return record.BatchOptions{ProducerID: pid, BaseSequence: 0, Transactional: true}
	}
	aborted := l.batch(txn(9), kv{"a", "aborted"})
	l.batch(txn(10), kv{"b", "committed"})
	abortMarker := l.marker(9, record.ControlAbort)
	l.marker(10, record.ControlCommit)
	l.batch(record.PlainBatch(0), kv{"", "no key"}, kv{"", "no key either"})
	p := Params{Aborted: []producerstate.AbortedTxn{{ProducerID: 9, FirstOffset: aborted, LastOffset: abortMarker}}}
	out, st, err := CleanAll(nil, record.Batches(l.log), p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range read(t, out) {
		got = append(got, string(r.Value))
	}
	if fmt.Sprint(got) != "[committed no key no key either]" || st.AbortedRemoved != 1 {
		t.Fatalf("kept %q, aborted removed %d; want the committed and keyless records", got, st.AbortedRemoved)
	}
	markers := 0
	for b := range record.Batches(out) {
		if h, _ := record.ParseHeader(b); h.IsControl() {
			markers++
		}
	}
	if markers != 2 {
		t.Fatalf("%d markers kept, want 2", markers)
	}
}

// A producer's last batch stays, empty, when every record in it went; any
// other emptied batch becomes part of a gap.
func TestProducersLastBatchStaysEmpty(t *testing.T) {
	l := &logBuilder{t: t}
	idem := record.BatchOptions{ProducerID: 3, ProducerEpoch: 1, BaseSequence: 0, Compression: record.CompressionSnappy}
	first := l.batch(idem, kv{"k", "1"})
	idem.BaseSequence = 1
	last := l.batch(idem, kv{"k", "2"}, kv{"j", "1"})
	l.batch(record.PlainBatch(0), kv{"k", "3"}, kv{"j", "2"})
	p := Params{KeepEmpty: func(h record.Header) bool { return h.ProducerID == 3 && h.BaseOffset == last }}
	out, _, err := CleanAll(nil, record.Batches(l.log), p)
	if err != nil {
		t.Fatal(err)
	}
	read(t, out)
	var bases []int64
	for b := range record.Batches(out) {
		h, _ := record.ParseHeader(b)
		bases = append(bases, h.BaseOffset)
		if h.BaseOffset == last && (h.NumRecords != 0 || h.LastSequence() != 2 || h.NextOffset() != last+2) {
			t.Fatalf("the producer's last batch: %+v; want empty, last sequence 2, next offset %d", h, last+2)
		}
		if h.BaseOffset == first && (h.NumRecords != 0 || h.Idempotent() || h.NextOffset() != last) {
			t.Fatalf("where the producer's first batch was: %+v; want a gap of no producer up to %d", h, last)
		}
	}
	if fmt.Sprint(bases) != fmt.Sprint([]int64{first, last, last + 2}) {
		t.Fatalf("batches at %v; want a gap, the producer's emptied last batch and the plain one", bases)
	}
}

// A marker stays while its transaction keeps a record. Once none is left
// (superseded, or aborted) the first cleaning gives the marker a delete
// horizon, and a cleaning past it removes it; the offsets stay one run.
func TestMarkersGoAfterTheirHorizon(t *testing.T) {
	l := &logBuilder{t: t}
	txn := func(pid int64) record.BatchOptions {
		return record.BatchOptions{ProducerID: pid, BaseSequence: 0, Transactional: true}
	}
	l.batch(txn(7), kv{"a", "1"})
	superseded := l.marker(7, record.ControlCommit)
	l.batch(txn(8), kv{"unique", "1"})
	kept := l.marker(8, record.ControlCommit)
	first := l.batch(txn(9), kv{"b", "aborted"})
	abortMarker := l.marker(9, record.ControlAbort)
	l.batch(record.PlainBatch(0), kv{"a", "2"})
	aborted := []producerstate.AbortedTxn{{ProducerID: 9, FirstOffset: first, LastOffset: abortMarker}}
	markersAt := func(log []byte) (bases []int64, horizons int) {
		for b := range record.Batches(log) {
			h, _ := record.ParseHeader(b)
			if h.IsControl() {
				if _, err := record.ParseEndTxnMarker(b); err != nil {
					t.Fatalf("the marker at %d: %v", h.BaseOffset, err)
				}
				bases = append(bases, h.BaseOffset)
				if _, ok := h.DeleteHorizon(); ok {
					horizons++
				}
			}
		}
		return bases, horizons
	}
	log := l.log
	for _, c := range []struct {
		now      int64
		markers  []int64
		horizons int
		removed  int
	}{
		{1000, []int64{superseded, kept, abortMarker}, 2, 0}, // horizons set at 1500
		{1499, []int64{superseded, kept, abortMarker}, 2, 0},
		{1500, []int64{kept}, 0, 2},
	} {
		out, st, err := CleanAll(nil, record.Batches(log), Params{NowMs: c.now, DeleteRetentionMs: 500, Aborted: aborted})
		if err != nil {
			t.Fatal(err)
		}
		read(t, out)
		bases, horizons := markersAt(out)
		if fmt.Sprint(bases) != fmt.Sprint(c.markers) || horizons != c.horizons || st.MarkersRemoved != c.removed {
			t.Fatalf("now %d: markers at %v (%d with a horizon), %d removed; want %v, %d, %d",
				c.now, bases, horizons, st.MarkersRemoved, c.markers, c.horizons, c.removed)
		}
		log = out
	}
}
