package record

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgBatch builds a batch with franz-go's kmsg types and computes its
// length and CRC independently of this package.
func kmsgBatch(t testing.TB, pid int64, epoch int16, seq int32, values ...string) []byte {
	t.Helper()
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i), Key: []byte("k"), Value: []byte(v)}
		body := r.AppendTo(nil)[1:] // drop the placeholder length varint (0)
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset:     0,
		Magic:           2,
		LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp:  1700000000000,
		MaxTimestamp:    1700000000000 + int64(len(values)-1),
		ProducerID:      pid,
		ProducerEpoch:   epoch,
		FirstSequence:   seq,
		NumRecords:      int32(len(values)),
		Records:         recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func TestParseKmsgBatch(t *testing.T) {
	b := kmsgBatch(t, 77, 3, 10, "a", "bb", "ccc")
	h, err := Check(b)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	want := Header{
		BaseOffset: 0, Length: int32(len(b) - 12), Magic: 2, CRC: h.CRC,
		LastOffsetDelta: 2, FirstTimestamp: 1700000000000, MaxTimestamp: 1700000000002,
		ProducerID: 77, ProducerEpoch: 3, BaseSequence: 10, NumRecords: 3,
	}
	if h != want {
		t.Fatalf("header = %+v\nwant     %+v", h, want)
	}
	if h.Size() != len(b) || h.Count() != 3 || h.LastSequence() != 12 || !h.Idempotent() {
		t.Fatalf("derived fields wrong: size %d count %d lastSeq %d", h.Size(), h.Count(), h.LastSequence())
	}
	if h.NextOffset() != 3 {
		t.Fatalf("NextOffset = %d, want 3", h.NextOffset())
	}
}

func TestRewriteKeepsCRC(t *testing.T) {
	b := kmsgBatch(t, 1, 0, 0, "x", "y")
	SetBaseOffset(b, 1<<40+5)
	SetLeaderEpoch(b, 42)
	h, err := Check(b)
	if err != nil {
		t.Fatalf("Check after rewrite: %v", err)
	}
	if h.BaseOffset != 1<<40+5 || h.PartitionLeaderEpoch != 42 {
		t.Fatalf("rewrite not visible: %+v", h)
	}
	if h.LastOffset() != 1<<40+6 {
		t.Fatalf("LastOffset = %d", h.LastOffset())
	}
}

func TestBadInputEachHasItsOwnError(t *testing.T) {
	good := kmsgBatch(t, 5, 0, 0, "v1", "v2")
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name  string
		in    []byte
		check func(error) bool
	}{
		{"short buffer", good[:HeaderSize-1], func(err error) bool { return errors.Is(err, ErrShortBuffer) }},
		{"wrong magic", mut(func(b []byte) []byte { b[16] = 1; return b }), func(err error) bool {
			var e *MagicError
			return errors.As(err, &e) && e.Magic == 1
		}},
		{"length longer than bytes", mut(func(b []byte) []byte { return b[:len(b)-1] }), func(err error) bool {
			var e *LengthError
			return errors.As(err, &e)
		}},
		{"length shorter than bytes", append(append([]byte(nil), good...), 0), func(err error) bool {
			var e *LengthError
			return errors.As(err, &e)
		}},
		{"crc mismatch", mut(func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }), func(err error) bool {
			var e *CRCError
			return errors.As(err, &e) && e.Want != e.Got
		}},
		{"count vs last offset delta", mut(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 7)
			FinishBatch(b) // a valid CRC, so only the count is wrong
			return b
		}), func(err error) bool {
			var e *CountError
			return errors.As(err, &e) && e.NumRecords == 7 && e.LastOffsetDelta == 1
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check(c.in)
			if err == nil || !c.check(err) {
				t.Fatalf("Check = %v, not the expected error", err)
			}
			if !errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("%v does not wrap ErrInvalidBatch", err)
			}
		})
	}
	t.Run("control batch from a producer", func(t *testing.T) {
		b := mut(func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[21:], AttrControl|AttrTransactional)
			FinishBatch(b)
			return b
		})
		if _, err := Check(b); err != nil {
			t.Fatalf("a control batch is a valid batch: %v", err)
		}
		if _, err := CheckProduce(b); !errors.Is(err, ErrControlBatch) {
			t.Fatalf("CheckProduce = %v, want ErrControlBatch", err)
		}
	})
	if _, err := CheckProduce(good); err != nil {
		t.Fatalf("CheckProduce(good) = %v", err)
	}
}

func TestNextSplitsStream(t *testing.T) {
	a := kmsgBatch(t, -1, -1, -1, "a")
	b := kmsgBatch(t, -1, -1, -1, "b", "c")
	SetBaseOffset(b, 1)
	stream := append(append([]byte(nil), a...), b...)
	first, rest, h, err := Next(stream)
	if err != nil || len(first) != len(a) || h.BaseOffset != 0 {
		t.Fatalf("first: len %d err %v h %+v", len(first), err, h)
	}
	second, rest, h, err := Next(rest)
	if err != nil || len(second) != len(b) || h.BaseOffset != 1 || len(rest) != 0 {
		t.Fatalf("second: len %d rest %d err %v", len(second), len(rest), err)
	}
	if _, _, _, err := Next(stream[len(a) : len(a)+HeaderSize+1]); err == nil {
		t.Fatal("Next accepted a batch cut short")
	}
}

func TestSequenceArithmetic(t *testing.T) {
	cases := []struct{ seq, n, want int32 }{
		{0, 1, 1},
		{5, 10, 15},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32 - 4, 4, math.MaxInt32},
		{math.MaxInt32 - 4, 5, 0},
	}
	for _, c := range cases {
		if got := AddSequence(c.seq, c.n); got != c.want {
			t.Errorf("AddSequence(%d, %d) = %d, want %d", c.seq, c.n, got, c.want)
		}
	}
	h := Header{BaseSequence: math.MaxInt32 - 1, LastOffsetDelta: 2}
	if h.LastSequence() != 0 {
		t.Errorf("LastSequence across wrap = %d, want 0", h.LastSequence())
	}
	if (Header{BaseSequence: NoSequence}).LastSequence() != NoSequence {
		t.Error("LastSequence of a batch without sequence is not NoSequence")
	}
}

// FuzzParseHeader checks that no input makes the header parser or the full
// check panic, and that anything Check accepts is self-consistent.
func FuzzParseHeader(f *testing.F) {
	f.Add(kmsgBatch(f, 77, 0, 0, "once"))
	f.Add(kmsgBatch(f, -1, -1, -1, "a", "b", "c"))
	f.Add(make([]byte, HeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err == nil && (h.Magic != 2 || h.NumRecords < 0 || h.NumRecords > h.LastOffsetDelta+1) {
			t.Fatalf("ParseHeader accepted %+v", h)
		}
		h, err = Check(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("error %v does not wrap ErrInvalidBatch", err)
			}
			return
		}
		if h.Size() != len(b) || ComputeCRC(b) != h.CRC {
			t.Fatalf("Check accepted an inconsistent batch %+v", h)
		}
		c := append([]byte(nil), b...)
		SetBaseOffset(c, 99)
		SetLeaderEpoch(c, 7)
		if _, err := Check(c); err != nil {
			t.Fatalf("rewrite broke an accepted batch: %v", err)
		}
	})
}

// TestSetLogAppendTime: the batch then reads, through kmsg (not this
// package), as a LogAppendTime batch with the new max timestamp and a valid
// CRC; the first timestamp and records are untouched.
func TestSetLogAppendTime(t *testing.T) {
	b := kmsgBatch(t, 1, 0, 0, "x", "y")
	SetLogAppendTime(b, 1800000000000)
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg cannot read the stamped batch: %v", err)
	}
	if kb.Attributes&AttrTimestampType == 0 || kb.MaxTimestamp != 1800000000000 || kb.FirstTimestamp != 1700000000000 {
		t.Fatalf("attributes %#x, timestamps first %d max %d", kb.Attributes, kb.FirstTimestamp, kb.MaxTimestamp)
	}
	if want := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(kb.CRC) != want {
		t.Fatalf("CRC %#x, want %#x", uint32(kb.CRC), want)
	}
	if _, err := Check(b); err != nil {
		t.Fatalf("Check: %v", err)
	}
}
