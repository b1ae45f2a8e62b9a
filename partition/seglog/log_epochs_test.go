package seglog

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// epochOf is the leader epoch the tests stamp into batch i: runs of one to
// a few dozen batches, with gaps, some crossing segment boundaries.
func epochOf(i int) int32 { return int32(3 + i/17*2 + i/40) }

// appendWithEpochs appends h's batches with AppendAt, as the FSM does,
// stamping epochOf(i).
func appendWithEpochs(t testing.TB, l *Log, h *history, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := l.AppendAt(h.batches[i], h.bases[i], epochOf(i)); err != nil {
			t.Fatalf("AppendAt batch %d: %v", i, err)
		}
	}
}

// wantEpochEnd is EpochEndOffset by a scan of the first n batches of h.
func wantEpochEnd(h *history, n int, epoch int32) (int32, int64) {
	floor := int32(-1)
	for i := range n {
		if epochOf(i) > epoch {
			return floor, h.bases[i]
		}
		floor = epochOf(i)
	}
	return floor, h.end(n)
}

func checkEpochEnds(t *testing.T, what string, l *Log, h *history, n int) {
	t.Helper()
	for e := int32(-1); e <= epochOf(n)+2; e++ {
		floor, end, err := l.EpochEndOffset(e)
		wantFloor, wantEnd := wantEpochEnd(h, n, e)
		if err != nil || floor != wantFloor || end != wantEnd {
			t.Fatalf("%s: EpochEndOffset(%d) = %d, %d, %v; want %d, %d", what, e, floor, end, err, wantFloor, wantEnd)
		}
	}
}

// The epoch index answers like a scan of the batches, across many
// segments, and the same after a clean restart, after a crash (no Close:
// the active segment is rescanned) and after the index files are lost.
func TestEpochEndOffsetSurvivesRestart(t *testing.T) {
	h := makeHistory(120, 0, 7)
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	checkEpochEnds(t, "empty", l, h, 0)
	appendWithEpochs(t, l, h, 0, len(h.batches))
	if len(segmentFiles(t, dir)) < 5 {
		t.Fatalf("only %d segments; the test wants epochs across several", len(segmentFiles(t, dir)))
	}
	checkEpochEnds(t, "open", l, h, len(h.batches))

	crashed := copyDir(t, dir) // as a crash would leave it: no index of the active segment
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkEpochEnds(t, "clean restart", openLog(t, dir, smallOpts()), h, len(h.batches))
	checkEpochEnds(t, "crash restart", openLog(t, crashed, smallOpts()), h, len(h.batches))

	noIndex := copyDir(t, dir)
	idx, _ := filepath.Glob(filepath.Join(noIndex, "*"+indexSuffix))
	for _, p := range idx {
		os.Remove(p)
	}
	checkEpochEnds(t, "index files lost", openLog(t, noIndex, smallOpts()), h, len(h.batches))
}

// An index file of version 1 (before epoch marks) is rebuilt from the
// segment's batch headers, and rewritten in the current version.
func TestEpochIndexRebuiltFromVersion1(t *testing.T) {
	h := makeHistory(80, 0, 8)
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	appendWithEpochs(t, l, h, 0, len(h.batches))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	idx, _ := filepath.Glob(filepath.Join(dir, "*"+indexSuffix))
	if len(idx) < 3 {
		t.Fatalf("%d index files", len(idx))
	}
	for _, p := range idx {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// Version 1: the same header and entries, no epoch marks.
		count := binary.BigEndian.Uint32(b[32:])
		v1 := append([]byte(nil), b[:indexHeaderSize+int(count)*indexEntrySize]...)
		binary.BigEndian.PutUint32(v1[4:], 1)
		v1 = binary.BigEndian.AppendUint32(v1, crc32.Checksum(v1, crc32c))
		if err := os.WriteFile(p, v1, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l = openLog(t, dir, smallOpts())
	checkEpochEnds(t, "from v1 index files", l, h, len(h.batches))
	for _, p := range idx[:len(idx)-1] { // the active segment has no index file while open
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if v := binary.BigEndian.Uint32(b[4:]); v != indexVersion {
			t.Fatalf("%s: version %d after reopening, want %d", filepath.Base(p), v, indexVersion)
		}
	}
}

// Truncation forgets the epochs of the dropped batches, including a cut
// inside an index interval and one inside a run of one epoch, and later
// appends start new marks; Reset forgets all.
func TestEpochEndOffsetAfterTruncateAndReset(t *testing.T) {
	h := makeHistory(100, 0, 9)
	l := openLog(t, t.TempDir(), smallOpts())
	appendWithEpochs(t, l, h, 0, len(h.batches))
	for _, keep := range []int{90, 68, 51, 50, 35, 3} {
		if err := l.TruncateTo(h.bases[keep]); err != nil {
			t.Fatal(err)
		}
		checkEpochEnds(t, "truncated", l, h, keep)
		appendWithEpochs(t, l, h, keep, keep+2)
		checkEpochEnds(t, "truncated and appended", l, h, keep+2)
		if err := l.TruncateTo(h.bases[keep]); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Reset(500); err != nil {
		t.Fatal(err)
	}
	if floor, end, err := l.EpochEndOffset(10); err != nil || floor != -1 || end != 500 {
		t.Fatalf("after Reset: %d, %d, %v; want -1, 500", floor, end, err)
	}
}

// Batches without an epoch (-1) leave no mark.
func TestEpochEndOffsetIgnoresNoEpoch(t *testing.T) {
	h := makeHistory(6, 0, 10)
	l := openLog(t, t.TempDir(), smallOpts())
	for i, b := range h.batches {
		epoch := int32(-1)
		if i >= 3 {
			epoch = 4
		}
		if err := l.AppendAt(b, h.bases[i], epoch); err != nil {
			t.Fatal(err)
		}
	}
	if floor, end, _ := l.EpochEndOffset(3); floor != -1 || end != h.bases[3] {
		t.Fatalf("epoch 3: %d, %d; want -1, %d", floor, end, h.bases[3])
	}
	if floor, end, _ := l.EpochEndOffset(4); floor != 4 || end != h.end(6) {
		t.Fatalf("epoch 4: %d, %d; want 4, %d", floor, end, h.end(6))
	}
}

// Epoch marks round-trip through the index file, and marks out of place
// make the file unusable (the segment is then rescanned).
func TestIndexFileEpochMarks(t *testing.T) {
	x := offsetIndex{entries: []indexEntry{{0, 0, 5}}, epochs: []epochMark{{0, 2}, {3, 5}, {9, 6}}}
	f, err := decodeIndex(encodeIndex(100, 500, 112, &x))
	if err != nil || len(f.idx.epochs) != 3 || f.idx.epochs[1] != (epochMark{3, 5}) {
		t.Fatalf("round trip: %+v, %v", f.idx.epochs, err)
	}
	for _, marks := range [][]epochMark{
		{{0, -1}},        // no epoch
		{{12, 2}},        // past the segment end
		{{3, 2}, {3, 4}}, // same offset twice
		{{0, 2}, {4, 2}}, // no change of epoch
		{{5, 2}, {4, 3}}, // out of order
	} {
		x.epochs = marks
		if _, err := decodeIndex(encodeIndex(100, 500, 112, &x)); !errors.Is(err, errBadIndex) {
			t.Errorf("marks %v: %v, want errBadIndex", marks, err)
		}
	}
}
