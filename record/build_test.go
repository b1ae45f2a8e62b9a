package record

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var codecs = []int{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}

func sampleRecords() []Record {
	return []Record{
		{Timestamp: 1_700_000_000_000, Key: []byte("k1"), Value: []byte("v1")},
		{Timestamp: 1_700_000_000_005, Key: nil, Value: bytes.Repeat([]byte("xyz"), 200)},
		{Timestamp: 1_699_999_999_990, Key: []byte{}, Value: nil, Headers: []RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "null", Value: nil}}},
		{Timestamp: 1_700_000_000_001, Key: []byte("same"), Value: []byte{}},
	}
}

// withOffsets is what decoding a batch built from recs at base offset base
// must give.
func withOffsets(recs []Record, base int64) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		r.Offset = base + int64(i)
		out[i] = r
	}
	return out
}

func TestAppendBatchRoundTripsEveryCodec(t *testing.T) {
	recs := sampleRecords()
	for _, codec := range codecs {
		t.Run(CodecName(codec), func(t *testing.T) {
			opts := BatchOptions{ProducerID: 77, ProducerEpoch: 3, BaseSequence: 10, Compression: codec}
			prefix := []byte("prefix")
			b, err := AppendBatch(prefix, opts, recs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b[:len(prefix)], prefix) {
				t.Fatal("AppendBatch changed the bytes before dst's end")
			}
			b = b[len(prefix):]
			h, err := Check(b)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if h.Compression() != codec || h.ProducerID != 77 || h.ProducerEpoch != 3 || h.BaseSequence != 10 ||
				h.NumRecords != 4 || h.LastOffsetDelta != 3 || h.PartitionLeaderEpoch != -1 ||
				h.FirstTimestamp != recs[0].Timestamp || h.MaxTimestamp != recs[1].Timestamp {
				t.Fatalf("header %+v", h)
			}
			SetBaseOffset(b, 100)
			got, err := AppendRecords(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			if want := withOffsets(recs, 100); !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestAppendBatchPlainAndErrors(t *testing.T) {
	b, err := AppendBatch(nil, PlainBatch(CompressionNone), sampleRecords()[:1])
	if err != nil {
		t.Fatal(err)
	}
	h, err := Check(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Idempotent() || h.BaseSequence != NoSequence || h.ProducerEpoch != NoProducerEpoch {
		t.Fatalf("plain batch header %+v", h)
	}
	if _, err := AppendBatch(nil, PlainBatch(CompressionNone), nil); !errors.Is(err, ErrNoRecords) {
		t.Fatalf("empty: %v", err)
	}
	var ce *CodecError
	if _, err := AppendBatch(nil, PlainBatch(9), sampleRecords()); !errors.As(err, &ce) || ce.Codec != 9 {
		t.Fatalf("bad codec: %v", err)
	}
}

func TestOurBatchesDecodeWithKmsg(t *testing.T) {
	recs := sampleRecords()
	b, err := AppendBatch(nil, BatchOptions{ProducerID: 5, ProducerEpoch: 1, BaseSequence: 7}, recs)
	if err != nil {
		t.Fatal(err)
	}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if kb.ProducerID != 5 || kb.FirstSequence != 7 || kb.NumRecords != 4 || uint32(kb.CRC) != crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatalf("kmsg header %+v", kb)
	}
	rest := kb.Records
	for i, want := range recs {
		var kr kmsg.Record
		if err := kr.ReadFrom(rest); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		rest = rest[int(kr.Length)+varlongLen(int64(kr.Length)):]
		if kr.OffsetDelta != int32(i) || kb.FirstTimestamp+kr.TimestampDelta64 != want.Timestamp ||
			!bytes.Equal(kr.Key, want.Key) || (kr.Key == nil) != (want.Key == nil) || !bytes.Equal(kr.Value, want.Value) ||
			len(kr.Headers) != len(want.Headers) {
			t.Fatalf("record %d: kmsg read %+v want %+v", i, kr, want)
		}
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes left", len(rest))
	}
}

// kmsgBuiltBatch builds a batch with kmsg, compressing the records section with
// compress (nil for none), independently of AppendBatch.
func kmsgBuiltBatch(t *testing.T, codec int, compress func([]byte) []byte, recs []Record) []byte {
	t.Helper()
	var raw []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.Timestamp - recs[0].Timestamp, OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		body := kr.AppendTo(nil) // with Length 0: measure, then rewrite
		kr.Length = int32(len(body) - 1)
		raw = kr.AppendTo(raw)
	}
	if compress != nil {
		raw = compress(raw)
	}
	kb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec), LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: recs[0].Timestamp, MaxTimestamp: recs[0].Timestamp, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: int32(len(recs)), Records: raw,
	}
	b := kb.AppendTo(nil)
	FinishBatch(b)
	if _, err := Check(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKmsgBuiltBatchesDecode(t *testing.T) {
	recs := sampleRecords()[:2] // keys and values only: kmsg encodes header values as non-null
	stdGzip := func(raw []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		w.Close()
		return buf.Bytes()
	}
	xerial := func(raw []byte) []byte { return AppendXerial(nil, raw, 100) } // several blocks
	for _, tc := range []struct {
		name     string
		codec    int
		compress func([]byte) []byte
	}{
		{"none", CompressionNone, nil},
		{"stdlib-gzip", CompressionGzip, stdGzip},
		{"xerial-snappy", CompressionSnappy, xerial},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := kmsgBuiltBatch(t, tc.codec, tc.compress, recs)
			got, err := AppendRecords(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			if want := withOffsets(recs, 0); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestAppendRecordsRejectsDamage(t *testing.T) {
	b, err := AppendBatch(nil, PlainBatch(CompressionNone), sampleRecords())
	if err != nil {
		t.Fatal(err)
	}
	// A record count larger than the records present.
	bad := bytes.Clone(b)
	bad[offCount+3]++
	bad[offLastDelta+3]++
	var re *RecordError
	if _, err := AppendRecords(nil, bad); !errors.As(err, &re) || !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("extra count: %v", err)
	}
	// Garbage in place of a compressed section.
	z, err := AppendBatch(nil, PlainBatch(CompressionZstd), sampleRecords())
	if err != nil {
		t.Fatal(err)
	}
	for i := HeaderSize; i < len(z); i++ {
		z[i] ^= 0x5a
	}
	var ce *CodecError
	if _, err := AppendRecords(nil, z); !errors.As(err, &ce) || !ce.Decode || !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("garbage zstd: %v", err)
	}
}

func TestCompressRoundTripAndPoolReuse(t *testing.T) {
	for _, codec := range codecs {
		for i := range 3 { // pooled encoders and decoders must reset cleanly
			src := bytes.Repeat([]byte(fmt.Sprintf("payload-%d-", i)), 1000*(i+1))
			c, err := Compress([]byte("x"), codec, src)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Decompress([]byte("y"), codec, c[1:])
			if err != nil {
				t.Fatalf("%s: %v", CodecName(codec), err)
			}
			if d[0] != 'y' || !bytes.Equal(d[1:], src) {
				t.Fatalf("%s round %d: mismatch", CodecName(codec), i)
			}
		}
	}
}

// LZ4 frames use 64 KiB blocks (the frame descriptor's BD byte, bits 4-6:
// 4), as Kafka's producer writes them, and a batch larger than one block
// still round-trips.
func TestLZ4BlocksOf64KiB(t *testing.T) {
	src := make([]byte, 300<<10)
	for i := range src {
		src[i] = byte(i * 7 / 5)
	}
	for range 2 { // a pooled writer keeps the option across Reset
		c, err := Compress(nil, CompressionLZ4, src)
		if err != nil {
			t.Fatal(err)
		}
		if bd := c[5]; bd>>4&7 != 4 {
			t.Fatalf("LZ4 block size index %d, want 4 (64 KiB)", bd>>4&7)
		}
		if d, err := Decompress(nil, CompressionLZ4, c); err != nil || !bytes.Equal(d, src) {
			t.Fatalf("round trip: %v", err)
		}
	}
}

func FuzzAppendRecords(f *testing.F) {
	for _, codec := range codecs {
		b, _ := AppendBatch(nil, PlainBatch(codec), sampleRecords())
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := AppendRecords(nil, b)
		if err == nil {
			h, _ := ParseHeader(b)
			if len(recs) != int(h.NumRecords) {
				t.Fatalf("%d records, header says %d", len(recs), h.NumRecords)
			}
		}
	})
}
