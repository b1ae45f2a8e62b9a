package seglog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// sealedBytes is the sealed segment at base, read with SealedBatches,
// and the offset after it.
func sealedBytes(l *Log, base int64) ([]byte, int64, error) {
	var out []byte
	for b, err := range l.SealedBatches(base) {
		if err != nil {
			return nil, 0, err
		}
		out = append(out, b...)
	}
	for _, s := range l.Segments() {
		if s.Base == base {
			return out, s.Next, nil
		}
	}
	return nil, 0, &BoundaryError{Offset: base}
}

// SealedBatches reads a segment's exact batches across its chunks: ones
// that straddle a chunk's end and one larger than a chunk.
func TestSealedBatchesAcrossChunks(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentBytes: 8 << 20})
	var want []byte
	var off int64
	for i, size := range []int{300_000, 700_000, 1_500_000, 90_000, 600_000} {
		b := newBatch(off, 1, size, int64(i))
		if err := l.Append(b); err != nil {
			t.Fatal(err)
		}
		want, off = append(want, b...), off+1
	}
	if err := l.RollBefore(off); err != nil {
		t.Fatal(err)
	}
	n := 0
	var got []byte
	for b, err := range l.SealedBatches(0) {
		if err != nil {
			t.Fatal(err)
		}
		got, n = append(got, b...), n+1
	}
	if n != 5 || !bytes.Equal(got, want) {
		t.Fatalf("read %d batches, %d bytes; want 5, %d, the same bytes", n, len(got), len(want))
	}
}

// SealedBatches of the active segment is a BoundaryError; of a closed log
// ErrClosed.
func TestSealedBatchesRefuses(t *testing.T) {
	l := openLog(t, t.TempDir(), smallOpts())
	appendAll(t, l, makeHistory(60, 0, 3).batches)
	segs := l.Segments()
	firstErr := func(base int64) error {
		for _, err := range l.SealedBatches(base) {
			if err != nil {
				return err
			}
		}
		return nil
	}
	var be *BoundaryError
	if err := firstErr(segs[len(segs)-1].Base); !errors.As(err, &be) {
		t.Fatalf("the active segment: %v, want a BoundaryError", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := firstErr(segs[0].Base); !errors.Is(err, ErrClosed) {
		t.Fatalf("a closed log: %v, want ErrClosed", err)
	}
}

// A Replacement refuses a batch out of place, and one aborted leaves no
// file and the log as it was.
func TestReplacementRefusesAndAborts(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	h := makeHistory(60, 0, 3)
	appendAll(t, l, h.batches)
	segs := l.Segments()
	r, err := l.NewReplacement(segs[0].Base, segs[0].Next)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Add(h.batches[1]); !errors.Is(err, ErrBadReplacement) {
		t.Fatalf("a batch at the wrong offset: %v, want ErrBadReplacement", err)
	}
	if err := r.Commit(); !errors.Is(err, ErrBadReplacement) {
		t.Fatalf("Commit after a refused batch: %v, want ErrBadReplacement", err)
	}
	r, err = l.NewReplacement(segs[0].Base, segs[0].Next)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Add(record.AppendGap(nil, segs[0].Base, segs[0].Next, 0, 0)); err != nil {
		t.Fatal(err)
	}
	r.Abort()
	if _, err := os.Stat(filepath.Join(dir, segmentName(segs[0].Base, cleanedSuffix))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the aborted replacement's file: %v, want none", err)
	}
	if got := readAll(t, l, 0, 1000); !bytes.Equal(got, h.concat(0, len(h.batches))) {
		t.Fatal("an aborted replacement changed the log")
	}
}

// A batch whose length field runs past its segment's end is the data's
// fault (record.ErrInvalidBatch), read without allocating that length.
func TestSealedBatchesGarbledLength(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	h := makeHistory(60, 0, 3)
	appendAll(t, l, h.batches)
	seg := l.Segments()[0]
	f, err := os.OpenFile(filepath.Join(dir, segmentName(seg.Base, logSuffix)), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The second batch's length field: 8 bytes into it.
	if _, err := f.WriteAt([]byte{0x7f, 0xff, 0xff, 0xff}, int64(len(h.batches[0])+8)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n := 0
	for _, err := range l.SealedBatches(seg.Base) {
		if err != nil {
			if !errors.Is(err, record.ErrInvalidBatch) {
				t.Fatalf("after %d batches: %v, want record.ErrInvalidBatch", n, err)
			}
			if n != 1 {
				t.Fatalf("the error came after %d batches, want 1", n)
			}
			return
		}
		n++
	}
	t.Fatal("no error for a length past the segment's end")
}
