package seglog

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// damagedLog writes h into a fresh log, closes it, and returns the
// directory, the last segment file and the first batch in that file.
func damagedLog(t *testing.T, h *history) (dir, last string, first int) {
	t.Helper()
	dir = t.TempDir()
	l := openLog(t, dir, smallOpts())
	appendAll(t, l, h.batches)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	last, first = lastSegment(t, dir, h)
	return dir, last, first
}

// expectRecovered reopens dir and checks that it holds exactly batches
// [0, keep) of h, that the next batch appends at the right offset, and
// that all of it survives another reopen.
func expectRecovered(t *testing.T, dir string, h *history, keep int) {
	t.Helper()
	var logged bytes.Buffer
	opts := smallOpts()
	opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	l := openLog(t, dir, opts)
	if got, want := l.EndOffset(), h.end(keep); got != want {
		t.Fatalf("EndOffset after recovery %d, want %d (batches [0, %d))\nlog: %s", got, want, keep, logged.String())
	}
	if got := readAll(t, l, 0, 1<<20); !bytes.Equal(got, h.concat(0, keep)) {
		t.Fatalf("recovered log holds %d bytes, want %d", len(got), len(h.concat(0, keep)))
	}
	if l.Size() != dirBytes(t, dir) {
		t.Fatalf("Size %d, files hold %d", l.Size(), dirBytes(t, dir))
	}
	if keep < len(h.batches) {
		appendAll(t, l, h.batches[keep:keep+1])
		keep++
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, smallOpts())
	if got := readAll(t, l, 0, 1<<20); !bytes.Equal(got, h.concat(0, keep)) {
		t.Fatalf("after append and reopen: %d bytes, want %d", len(got), len(h.concat(0, keep)))
	}
}

func TestRecoverTornTail(t *testing.T) {
	h := makeHistory(60, 0, 7)
	dir, last, first := damagedLog(t, h)
	// Positions of the batches in the last segment, and its size.
	var starts []int64
	var size int64
	for _, b := range h.batches[first:] {
		starts = append(starts, size)
		size += int64(len(b))
	}
	if len(starts) < 3 {
		t.Fatalf("last segment holds %d batches; want several", len(starts))
	}
	b1 := starts[1]
	cuts := []int64{
		0, 1, 8, 30, record.HeaderSize - 1, record.HeaderSize, record.HeaderSize + 3, // first batch
		b1 - 1, b1, b1 + 1, b1 + 10, b1 + 40, b1 + record.HeaderSize, b1 + record.HeaderSize + 5, // second
		size - 1,
	}
	rng := rand.New(rand.NewPCG(42, 43))
	for range 12 {
		cuts = append(cuts, rng.Int64N(size))
	}
	for _, cut := range cuts {
		// Batches of the last segment that end at or before the cut survive.
		keep := first
		for keep < len(h.batches) && starts[keep-first]+int64(len(h.batches[keep])) <= cut {
			keep++
		}
		t.Run("", func(t *testing.T) {
			d := copyDir(t, dir)
			if err := os.Truncate(filepath.Join(d, filepath.Base(last)), cut); err != nil {
				t.Fatal(err)
			}
			expectRecovered(t, d, h, keep)
		})
	}
}

func TestRecoverGarbageTail(t *testing.T) {
	h := makeHistory(40, 0, 8)
	dir, last, _ := damagedLog(t, h)
	end := h.end(len(h.batches))
	badCRC := newBatch(end, 2, 30, 5)
	badCRC[len(badCRC)-3] ^= 0x10
	rng := rand.New(rand.NewPCG(9, 9))
	random := make([]byte, 3000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	next := newBatch(end, 2, 30, 5)
	for _, tc := range []struct {
		name    string
		garbage []byte
	}{
		{"zero page", make([]byte, 4096)},
		{"random bytes", random},
		{"batch with bad crc", badCRC},
		{"batch with wrong base offset", newBatch(end+1, 2, 30, 5)},
		{"batch repeating the last offsets", h.batches[len(h.batches)-1]},
		{"half a batch", next[:len(next)/2]},
		{"one byte", []byte{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := copyDir(t, dir)
			p := filepath.Join(d, filepath.Base(last))
			before, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, append(slices.Clone(before), tc.garbage...), 0o644); err != nil {
				t.Fatal(err)
			}
			expectRecovered(t, d, h, len(h.batches))
		})
	}
}

func TestRecoverCorruptRecordInLastSegment(t *testing.T) {
	h := makeHistory(40, 0, 10)
	dir, last, first := damagedLog(t, h)
	data, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	var pos int
	for j := first; j < len(h.batches); j++ {
		// Flip one byte inside batch j's records: its CRC no longer matches.
		d := copyDir(t, dir)
		bad := slices.Clone(data)
		bad[pos+len(h.batches[j])-1] ^= 0x01
		if err := os.WriteFile(filepath.Join(d, filepath.Base(last)), bad, 0o644); err != nil {
			t.Fatal(err)
		}
		expectRecovered(t, d, h, j)
		pos += len(h.batches[j])
	}
}

func TestRecoverWarnsAboutCut(t *testing.T) {
	h := makeHistory(20, 0, 11)
	dir, last, _ := damagedLog(t, h)
	fi, err := os.Stat(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(last, fi.Size()-7); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	opts := smallOpts()
	opts.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	openLog(t, dir, opts)
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "cut_bytes=") {
		t.Fatalf("no warning about the cut: %q", logged.String())
	}
}

func TestSealedIndexRebuilt(t *testing.T) {
	h := makeHistory(80, 0, 12)
	dir, _, _ := damagedLog(t, h)
	files := segmentFiles(t, dir)
	if len(files) < 4 {
		t.Fatalf("%d segments", len(files))
	}
	idxPath := func(i int) string { return strings.TrimSuffix(files[i], logSuffix) + indexSuffix }
	orig, err := os.ReadFile(idxPath(1))
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(idxPath(2))
	if err != nil {
		t.Fatal(err)
	}
	flipped := slices.Clone(orig)
	flipped[len(flipped)/2] ^= 0x40
	for _, tc := range []struct {
		name  string
		index []byte // nil: no index file
	}{
		{"missing", nil},
		{"corrupt", flipped},
		{"another segment's", other},
		{"empty", []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := copyDir(t, dir)
			p := filepath.Join(d, filepath.Base(idxPath(1)))
			var err error
			if tc.index == nil {
				err = os.Remove(p)
			} else {
				err = os.WriteFile(p, tc.index, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			expectRecovered(t, d, h, len(h.batches))
			got, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(got, orig) {
				t.Fatalf("rebuilt index differs from the original (%v)", err)
			}
		})
	}
}

func TestStaleIndexOfSameSizeRejected(t *testing.T) {
	// An index that matches the file's size but not its batches (the file
	// was truncated and rewritten with other batch sizes) must not be used.
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentBytes: 1000, IndexIntervalBytes: 1})
	a := [][]byte{newBatch(0, 1, 100, 1), newBatch(1, 1, 100, 2), newBatch(2, 1, 100, 3), newBatch(3, 1, 100, 4)}
	appendAll(t, l, a) // 4 batches, then a roll writes the first index
	appendAll(t, l, [][]byte{newBatch(4, 1, 900, 5)})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := segmentFiles(t, dir)
	stale, err := os.ReadFile(strings.TrimSuffix(files[0], logSuffix) + indexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite segment 0 with other batches of the same total size.
	b := [][]byte{newBatch(0, 2, 10, 1), newBatch(2, 1, 100, 2)}
	var data []byte
	for _, x := range b {
		data = append(data, x...)
	}
	total := len(bytes.Join(a, nil))
	last := newBatch(3, 1, 0, 3)
	pad := total - len(data) - len(last)
	last = newBatch(3, 1, pad, 3)
	for len(data)+len(last) != total { // the value length varint may shift the size
		pad--
		last = newBatch(3, 1, pad, 3)
	}
	data = append(data, last...)
	if err := os.WriteFile(files[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimSuffix(files[0], logSuffix)+indexSuffix, stale, 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{SegmentBytes: 1000, IndexIntervalBytes: 1})
	for off := int64(0); off < 4; off++ {
		got, err := l.Read(off, 1)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		hs := checkBatches(t, got)
		if off < hs[0].BaseOffset || off >= hs[0].NextOffset() {
			t.Fatalf("Read(%d) returned batch [%d, %d)", off, hs[0].BaseOffset, hs[0].NextOffset())
		}
	}
}

func TestDamagedSealedSegmentDropsLaterOnes(t *testing.T) {
	h := makeHistory(80, 0, 13)
	dir, _, _ := damagedLog(t, h)
	files := segmentFiles(t, dir)
	// Cut segment 2 in the middle of a batch and lose its index, as a crash
	// before its writeback could.
	base, _ := parseSegmentName(filepath.Base(files[2]), logSuffix)
	first := h.indexOf(base)
	cut := int64(len(h.batches[first]) + len(h.batches[first+1]) + 17)
	if err := os.Truncate(files[2], cut); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(strings.TrimSuffix(files[2], logSuffix) + indexSuffix); err != nil {
		t.Fatal(err)
	}
	expectRecovered(t, dir, h, first+2)
	for _, f := range files[3:] {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Fatalf("later segment %s still there: %v", f, err)
		}
	}
}

func TestGapBetweenSegmentsDropsLaterOnes(t *testing.T) {
	h := makeHistory(80, 0, 14)
	dir, _, _ := damagedLog(t, h)
	files := segmentFiles(t, dir)
	// Remove segment 2 (and its index): segment 3 no longer follows 1.
	for _, p := range []string{files[2], strings.TrimSuffix(files[2], logSuffix) + indexSuffix} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	base, _ := parseSegmentName(filepath.Base(files[2]), logSuffix)
	expectRecovered(t, dir, h, h.indexOf(base))
}

func TestOrphanIndexRemoved(t *testing.T) {
	dir := t.TempDir()
	orphan := filepath.Join(dir, segmentName(77, indexSuffix))
	other := filepath.Join(dir, "raft.db")
	for _, p := range []string{orphan, other} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	openLog(t, dir, Options{})
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphan index kept: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("unrelated file touched: %v", err)
	}
}
