package seglog

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestAdvanceStartDeletesWholeSegmentsBelow moves the start into the middle
// of a segment: earlier segments go, the one holding the start stays, reads
// below it are out of range and a read at it returns the batch holding it.
func TestAdvanceStartDeletesWholeSegmentsBelow(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	h := makeHistory(60, 0, 1)
	appendAll(t, l, h.batches)
	segs := l.Segments()
	if len(segs) < 4 {
		t.Fatalf("want several segments, have %d", len(segs))
	}
	target := segs[2].Base + 1 // inside the third segment
	if err := l.AdvanceStart(target); err != nil {
		t.Fatalf("AdvanceStart: %v", err)
	}
	if got := l.StartOffset(); got != target {
		t.Fatalf("StartOffset = %d, want %d", got, target)
	}
	if got := l.Segments(); got[0].Base != segs[2].Base || len(got) != len(segs)-2 {
		t.Fatalf("segments after advance start at %d (%d of them), want %d (%d)", got[0].Base, len(got), segs[2].Base, len(segs)-2)
	}
	if files := segmentFiles(t, dir); len(files) != len(segs)-2 {
		t.Fatalf("%d segment files remain, want %d", len(files), len(segs)-2)
	}
	if _, err := l.Read(target-1, 1000); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read below the start: %v, want ErrOffsetOutOfRange", err)
	}
	b, err := l.Read(target, 1)
	if err != nil {
		t.Fatalf("Read at the start: %v", err)
	}
	if i := h.indexOf(target); !bytes.Equal(b, h.batches[i]) {
		t.Fatalf("Read at the start did not return the batch holding it")
	}
	if err := l.AdvanceStart(target - 5); err != nil || l.StartOffset() != target {
		t.Fatalf("AdvanceStart backwards: err %v, start %d; want no change", err, l.StartOffset())
	}
	if err := l.AdvanceStart(l.EndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("AdvanceStart past the end: %v, want ErrOffsetOutOfRange", err)
	}
	if off, _, ok := l.OffsetForTimestamp(0); !ok || off != target {
		t.Fatalf("OffsetForTimestamp(0) = %d, %v; want the start %d", off, ok, target)
	}
	if err := l.TruncateTo(target - 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("TruncateTo below the start: %v, want ErrOffsetOutOfRange", err)
	}
}

// TestAdvanceStartToEndEmptiesTheLog advances to the log end: every batch
// goes (the active segment is rolled first), and appends go on after it.
func TestAdvanceStartToEndEmptiesTheLog(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	h := makeHistory(30, 0, 2)
	appendAll(t, l, h.batches)
	end := l.EndOffset()
	if err := l.AdvanceStart(end); err != nil {
		t.Fatalf("AdvanceStart(end): %v", err)
	}
	if l.StartOffset() != end || l.Size() != 0 {
		t.Fatalf("after AdvanceStart(end): start %d, size %d; want %d, 0", l.StartOffset(), l.Size(), end)
	}
	if files := segmentFiles(t, dir); len(files) != 1 {
		t.Fatalf("%d segment files remain, want the empty active one", len(files))
	}
	more := makeHistory(3, end, 3)
	appendAll(t, l, more.batches)
	if got := readAll(t, l, end, 1<<20); !bytes.Equal(got, more.concat(0, 3)) {
		t.Fatalf("appends after emptying the log read back differently")
	}
	l.Close()
	l2 := openLog(t, dir, smallOpts())
	if l2.StartOffset() != end || l2.EndOffset() != more.end(3) {
		t.Fatalf("reopened log holds [%d, %d), want [%d, %d)", l2.StartOffset(), l2.EndOffset(), end, more.end(3))
	}
}

// TestSegmentAgeRollsTheActiveSegment: with SegmentAge set, the first
// append after the age has passed starts a new segment.
func TestSegmentAgeRollsTheActiveSegment(t *testing.T) {
	opts := smallOpts()
	opts.SegmentBytes = 1 << 20
	l := openLog(t, t.TempDir(), opts)
	h := makeHistory(4, 0, 4)
	appendAll(t, l, h.batches[:2])
	l.SetSegmentLimits(0, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	appendAll(t, l, h.batches[2:3])
	l.SetSegmentLimits(0, 0)
	appendAll(t, l, h.batches[3:])
	segs := l.Segments()
	if len(segs) != 2 || segs[1].Base != h.bases[2] {
		t.Fatalf("segments %+v, want a roll at %d", segs, h.bases[2])
	}
	if segs[0].MaxTimestamp != max(h.ts[0], h.ts[1]) {
		t.Fatalf("first segment MaxTimestamp %d, want %d", segs[0].MaxTimestamp, max(h.ts[0], h.ts[1]))
	}
}
