package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// filterInput is a batch of five records of an idempotent producer at
// offset 100 with the given codec.
func filterInput(t *testing.T, codec int) []byte {
	t.Helper()
	var recs []Record
	for i := range 5 {
		recs = append(recs, Record{Timestamp: 1000 + int64(i), Key: []byte{byte('a' + i)},
			Value: []byte(fmt.Sprintf("v%d", i)), Headers: []RecordHeader{{Key: "h", Value: []byte{byte(i)}}}})
	}
	recs[3].Value = nil // a tombstone
	b, err := AppendBatch(nil, BatchOptions{ProducerID: 7, ProducerEpoch: 2, BaseSequence: 40, Compression: codec}, recs)
	if err != nil {
		t.Fatal(err)
	}
	SetBaseOffset(b, 100)
	SetLeaderEpoch(b, 3)
	FinishBatch(b)
	return b
}

// Filter keeps the chosen records with their offsets, timestamps, keys,
// values and headers, and every header field but the count, length and
// CRC, for every codec.
func TestFilterKeepsOffsetsAndHeader(t *testing.T) {
	for _, codec := range []int{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		t.Run(CodecName(codec), func(t *testing.T) {
			in := filterInput(t, codec)
			want, err := AppendRecords(nil, in)
			if err != nil {
				t.Fatal(err)
			}
			out, kept, err := Filter(nil, in, FilterOptions{Keep: func(r Record) bool { return r.Offset%2 == 0 }, DeleteHorizon: -1})
			if err != nil || kept != 3 {
				t.Fatalf("Filter: kept %d, %v; want 3", kept, err)
			}
			h, err := Check(out)
			if err != nil {
				t.Fatalf("the rewritten batch fails Check: %v", err)
			}
			hin, _ := ParseHeader(in)
			hin.Length, hin.CRC, hin.NumRecords = h.Length, h.CRC, 3
			if h != hin {
				t.Fatalf("header %+v, want %+v", h, hin)
			}
			got, err := AppendRecords(nil, out)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range got {
				w := want[2*i]
				if r.Offset != w.Offset || r.Timestamp != w.Timestamp || !bytes.Equal(r.Key, w.Key) ||
					!bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) || r.Headers[0].Value[0] != w.Headers[0].Value[0] {
					t.Fatalf("record %d: %+v, want %+v", i, r, w)
				}
			}
			if _, err := CheckProduce(out); !errors.As(err, new(*CountError)) {
				t.Fatalf("CheckProduce of a batch with gaps: %v, want a CountError", err)
			}
		})
	}
}

// Keeping every record of an uncompressed batch gives the same bytes;
// keeping none gives a batch of no records that still spans its offsets.
func TestFilterAllAndNone(t *testing.T) {
	in := filterInput(t, CompressionNone)
	out, kept, err := Filter(nil, in, FilterOptions{Keep: func(Record) bool { return true }, DeleteHorizon: -1})
	if err != nil || kept != 5 || !bytes.Equal(out, in) {
		t.Fatalf("keep all: kept %d, %v, same bytes %v", kept, err, bytes.Equal(out, in))
	}
	out, kept, err = Filter([]byte("x"), in, FilterOptions{Keep: func(Record) bool { return false }, DeleteHorizon: 5000})
	if err != nil || kept != 0 || out[0] != 'x' {
		t.Fatalf("keep none: kept %d, %v", kept, err)
	}
	h, err := Check(out[1:])
	if err != nil || h.NumRecords != 0 || h.NextOffset() != 105 || h.LastSequence() != 44 {
		t.Fatalf("empty batch %+v, %v: want 0 records, next offset 105, last sequence 44", h, err)
	}
	if recs, err := AppendRecords(nil, out[1:]); err != nil || len(recs) != 0 {
		t.Fatalf("records of the empty batch: %v, %v", recs, err)
	}
	// A compressed batch emptied has no codec left, as Kafka writes one:
	// a client would fail to decompress an empty body (franz-go did).
	for _, codec := range []int{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		out, _, err := Filter(nil, filterInput(t, codec), FilterOptions{Keep: func(Record) bool { return false }, DeleteHorizon: -1})
		if err != nil {
			t.Fatal(err)
		}
		if h, err := Check(out); err != nil || h.Compression() != CompressionNone || h.NumRecords != 0 {
			t.Fatalf("%s batch emptied: %+v, %v; want no codec and no records", CodecName(codec), h, err)
		}
	}
}

// AppendGap spans exactly its offsets with batches of no records, split
// where a batch's int32 last offset delta ends.
func TestAppendGap(t *testing.T) {
	b := AppendGap(nil, 10, 15, 4, 777)
	h, err := Check(b)
	if err != nil || h.BaseOffset != 10 || h.NextOffset() != 15 || h.NumRecords != 0 || h.PartitionLeaderEpoch != 4 ||
		h.MaxTimestamp != 777 || h.Idempotent() || h.IsTransactional() || h.IsControl() {
		t.Fatalf("gap %+v, %v", h, err)
	}
	b = AppendGap(nil, 0, 1<<32, 0, 0)
	next := int64(0)
	for len(b) > 0 {
		batch, rest, h, err := Next(b)
		if _, cerr := Check(batch); err != nil || cerr != nil || h.BaseOffset != next {
			t.Fatalf("gap batch %+v at %d: %v %v", h, next, err, cerr)
		}
		next, b = h.NextOffset(), rest
	}
	if next != 1<<32 {
		t.Fatalf("gaps end at %d, want %d", next, int64(1)<<32)
	}
}

// A batch that keeps a tombstone gets the delete horizon once: the flag,
// the horizon in the first timestamp, every record's time unchanged; a
// second cleaning leaves it as it is. Without a tombstone kept, none.
func TestFilterSetsDeleteHorizonOnce(t *testing.T) {
	for _, codec := range []int{CompressionNone, CompressionZstd} {
		in := filterInput(t, codec)
		want, _ := AppendRecords(nil, in)
		all := func(Record) bool { return true }
		once, _, err := Filter(nil, in, FilterOptions{Keep: all, DeleteHorizon: 5000})
		if err != nil {
			t.Fatal(err)
		}
		h, err := Check(once)
		if at, ok := h.DeleteHorizon(); err != nil || !ok || at != 5000 || h.MaxTimestamp != 1004 {
			t.Fatalf("%s: header %+v, %v; want the delete horizon 5000, max timestamp 1004", CodecName(codec), h, err)
		}
		got, err := AppendRecords(nil, once)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i].Timestamp != want[i].Timestamp || got[i].Offset != want[i].Offset || !bytes.Equal(got[i].Value, want[i].Value) {
				t.Fatalf("%s: record %d is %+v, want %+v", CodecName(codec), i, got[i], want[i])
			}
		}
		twice, _, _ := Filter(nil, once, FilterOptions{Keep: all, DeleteHorizon: 9000})
		if h2, _ := Check(twice); h2.FirstTimestamp != 5000 || (codec == CompressionNone && !bytes.Equal(twice, once)) {
			t.Fatalf("%s: a second cleaning moved the horizon to %d", CodecName(codec), h2.FirstTimestamp)
		}
		live, _, _ := Filter(nil, in, FilterOptions{Keep: func(r Record) bool { return r.Value != nil }, DeleteHorizon: 5000})
		if h3, _ := Check(live); h3.Attributes&AttrDeleteHorizon != 0 || h3.FirstTimestamp != 1000 {
			t.Fatalf("%s: a batch without tombstones got a horizon: %+v", CodecName(codec), h3)
		}
	}
}
