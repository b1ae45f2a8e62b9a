package record

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// claiming rewrites a batch to claim n records (count and last offset
// delta) with a valid CRC.
func claiming(b []byte, n int32) []byte {
	b = append([]byte(nil), b...)
	binary.BigEndian.PutUint32(b[offLastDelta:], uint32(n-1))
	binary.BigEndian.PutUint32(b[offCount:], uint32(n))
	FinishBatch(b)
	return b
}

func TestCheckRecordCount(t *testing.T) {
	recs := sampleRecords()
	for _, codec := range codecs {
		t.Run(CodecName(codec), func(t *testing.T) {
			good, err := AppendBatch(nil, PlainBatch(codec), recs)
			if err != nil {
				t.Fatal(err)
			}
			h, err := CheckProduce(good)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckRecordCount(good, h); err != nil {
				t.Fatalf("correct batch: %v", err)
			}
			n := int32(len(recs))
			for _, claim := range []int32{1, n - 1, n + 1, math.MaxInt32} {
				bad := claiming(good, claim)
				h, err := CheckProduce(bad)
				if err != nil {
					t.Fatalf("claim %d: %v", claim, err)
				}
				err = CheckRecordCount(bad, h)
				var ce *RecordCountError
				if !errors.As(err, &ce) || ce.NumRecords != claim || !errors.Is(err, ErrInvalidRecord) || !errors.Is(err, ErrInvalidBatch) {
					t.Fatalf("claim %d of %d records: %v, want a RecordCountError", claim, n, err)
				}
			}
		})
	}
}

func TestCountRecordsBadLengths(t *testing.T) {
	rec := []byte{12, 0, 0, 0, 1, 1, 0} // length 6 (zigzag 12), then a minimal record
	for _, tc := range []struct {
		name string
		body []byte
		want int32
	}{
		{"length past the end", []byte{20, 0, 0, 0, 1, 1, 0}, 1},
		{"negative length", append([]byte{1}, rec[1:]...), 1},
		{"length below a minimal record", []byte{10, 0, 0, 0, 1, 1, 0}, 1},
		{"bad varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 1},
		{"trailing byte", append(append([]byte(nil), rec...), 0), 1},
	} {
		if err := countRecords(tc.body, tc.want); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: %v, want ErrInvalidRecord", tc.name, err)
		}
	}
	if err := countRecords(append(append([]byte(nil), rec...), rec...), 2); err != nil {
		t.Errorf("two minimal records: %v", err)
	}
}

// A compressed section that does not decompress is a codec error, which
// Kafka answers CORRUPT_MESSAGE, not a count error.
func TestCheckRecordCountBadCompression(t *testing.T) {
	good, err := AppendBatch(nil, PlainBatch(CompressionGzip), sampleRecords())
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[HeaderSize+12] ^= 0xff
	FinishBatch(bad)
	h, err := CheckProduce(bad)
	if err != nil {
		t.Fatal(err)
	}
	err = CheckRecordCount(bad, h)
	var ce *CodecError
	if !errors.As(err, &ce) || errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("%v, want a CodecError", err)
	}
}
