package seglog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/minikafka/minikafka-go/internal/nozero/nozerotest"
	"github.com/minikafka/minikafka-go/record"
)

func TestAppendReadAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	h := makeHistory(300, 0, 1)
	appendAll(t, l, h.batches)

	if n := len(segmentFiles(t, dir)); n < 10 {
		t.Fatalf("%d segments, want many rolls", n)
	}
	if got, want := l.EndOffset(), h.end(len(h.batches)); got != want {
		t.Fatalf("EndOffset %d, want %d", got, want)
	}
	if got := l.StartOffset(); got != 0 {
		t.Fatalf("StartOffset %d, want 0", got)
	}
	if got, want := l.Size(), int64(len(h.concat(0, len(h.batches)))); got != want || dirBytes(t, dir) != want {
		t.Fatalf("Size %d, files %d, want %d", got, dirBytes(t, dir), want)
	}
	// Every offset, including those inside batches, reads back its batch.
	for i, base := range h.bases {
		for off := base; off < h.end(i+1); off++ {
			got, err := l.Read(off, 1)
			if err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
			if !bytes.Equal(got, h.batches[i]) {
				t.Fatalf("Read(%d) = %d bytes, want batch %d (%d bytes)", off, len(got), i, len(h.batches[i]))
			}
		}
	}
	for _, step := range []int{1, 500, 5000, 1 << 30} {
		if got := readAll(t, l, 0, step); !bytes.Equal(got, h.concat(0, len(h.batches))) {
			t.Fatalf("readAll with maxBytes %d differs", step)
		}
	}
}

func TestReadFromMiddleOfBatch(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	a, b := newBatch(0, 3, 10, 1), newBatch(3, 5, 10, 2)
	appendAll(t, l, [][]byte{a, b})
	for off := int64(3); off < 8; off++ {
		got, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("Read(%d) does not start with the batch [3, 8)", off)
		}
	}
	got, err := l.Read(2, 1<<20)
	if err != nil || !bytes.Equal(got, append(append([]byte(nil), a...), b...)) {
		t.Fatalf("Read(2) = %d bytes, %v; want both batches", len(got), err)
	}
}

func TestReadMaxBytes(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	h := makeHistory(60, 0, 2)
	appendAll(t, l, h.batches)
	sz := func(i int) int { return len(h.batches[i]) }
	nozerotest.DirtyHeap() // reads go to uncleared memory: nothing unread may show
	for _, tc := range []struct {
		name     string
		first    int
		maxBytes int
		want     int // batches returned
	}{
		{"zero still gives one batch", 5, 0, 1},
		{"less than one batch", 5, sz(5) - 1, 1},
		{"exactly one", 5, sz(5), 1},
		{"exactly three", 5, sz(5) + sz(6) + sz(7), 3},
		{"three and a bit", 5, sz(5) + sz(6) + sz(7) + 20, 3},
		{"everything across segments", 0, 1 << 30, 60},
		{"last batch", 59, 1 << 30, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.Read(h.bases[tc.first], tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if want := h.concat(tc.first, tc.first+tc.want); !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes (%d batches), want %d batches", len(got), len(checkBatches(t, got)), tc.want)
			}
		})
	}
	// Reads crossing segment boundaries with budgets that end mid-batch.
	for i := range h.batches {
		budget := sz(i) + 1500
		got, err := l.Read(h.bases[i], budget)
		if err != nil {
			t.Fatal(err)
		}
		j := i + 1
		for n := sz(i); j < len(h.batches) && n+sz(j) <= budget; j++ {
			n += sz(j)
		}
		if !bytes.Equal(got, h.concat(i, j)) || cap(got) != len(got) {
			t.Fatalf("Read(batch %d, %d) returned %d bytes (capacity %d), want batches [%d, %d)", i, budget, len(got), cap(got), i, j)
		}
	}
}

func TestReadOutOfRange(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	appendAll(t, l, [][]byte{newBatch(0, 2, 1, 1), newBatch(2, 2, 1, 1)})
	if b, err := l.Read(4, 100); b != nil || err != nil {
		t.Fatalf("Read(end) = %d bytes, %v; want nil, nil", len(b), err)
	}
	for _, off := range []int64{5, 1000, -1} {
		_, err := l.Read(off, 100)
		var re *OffsetRangeError
		if !errors.As(err, &re) || !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("Read(%d) err = %v, want *OffsetRangeError", off, err)
		}
		if re.Offset != off || re.Start != 0 || re.End != 4 {
			t.Fatalf("Read(%d) err = %+v", off, re)
		}
	}
	if err := l.Reset(100); err != nil {
		t.Fatal(err)
	}
	_, err := l.Read(50, 100)
	var re *OffsetRangeError
	if !errors.As(err, &re) || re.Start != 100 || re.End != 100 {
		t.Fatalf("Read below start after Reset: %v", err)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	h := makeHistory(120, 0, 3)
	l := openLog(t, dir, smallOpts())
	appendAll(t, l, h.batches[:100])
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := segmentFiles(t, dir)
	for _, f := range files {
		if _, err := os.Stat(f[:len(f)-len(logSuffix)] + indexSuffix); err != nil {
			t.Fatalf("no index for %s after Close: %v", f, err)
		}
	}

	l = openLog(t, dir, smallOpts())
	// While open, the active segment has no index file (Close's is stale
	// once appends or truncations change the segment).
	if _, err := os.Stat(files[len(files)-1][:len(files[len(files)-1])-len(logSuffix)] + indexSuffix); !os.IsNotExist(err) {
		t.Fatalf("active segment's index file exists while open: %v", err)
	}
	if l.StartOffset() != 0 || l.EndOffset() != h.end(100) || l.Size() != int64(len(h.concat(0, 100))) {
		t.Fatalf("reopened: start %d end %d size %d", l.StartOffset(), l.EndOffset(), l.Size())
	}
	if !bytes.Equal(readAll(t, l, 0, 3000), h.concat(0, 100)) {
		t.Fatal("reopened log reads differently")
	}
	appendAll(t, l, h.batches[100:])
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, smallOpts())
	if !bytes.Equal(readAll(t, l, 0, 3000), h.concat(0, 120)) {
		t.Fatal("second reopen reads differently")
	}
}

func TestAppendValidation(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	appendAll(t, l, [][]byte{newBatch(0, 2, 5, 1)})

	err := l.Append(newBatch(5, 1, 5, 1))
	var me *OffsetMismatchError
	if !errors.Is(err, ErrOffsetMismatch) || !errors.As(err, &me) || me.Got != 5 || me.Want != 2 {
		t.Fatalf("Append at wrong offset: %v", err)
	}
	if err := l.AppendAt(newBatch(0, 1, 5, 1), 3, 0); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("AppendAt at wrong offset: %v", err)
	}

	bad := newBatch(2, 1, 5, 1)
	bad[len(bad)-1] ^= 0xff
	var ce *record.CRCError
	if err := l.Append(bad); !errors.Is(err, record.ErrInvalidBatch) || !errors.As(err, &ce) {
		t.Fatalf("Append with bad CRC: %v", err)
	}
	long := append(newBatch(2, 1, 5, 1), 0)
	if err := l.Append(long); !errors.Is(err, record.ErrInvalidBatch) {
		t.Fatalf("Append with trailing byte: %v", err)
	}
	if err := l.AppendAt(long, 2, 0); !errors.Is(err, record.ErrInvalidBatch) {
		t.Fatalf("AppendAt with trailing byte: %v", err)
	}
	if err := l.AppendAt(long[:40], 2, 0); !errors.Is(err, record.ErrInvalidBatch) {
		t.Fatalf("AppendAt with short header: %v", err)
	}
	if l.EndOffset() != 2 || l.Size() != int64(len(newBatch(0, 2, 5, 1))) {
		t.Fatalf("rejected appends changed the log: end %d size %d", l.EndOffset(), l.Size())
	}
	// AppendAt does not check the CRC (its caller did).
	if err := l.AppendAt(bad, 2, 0); err != nil {
		t.Fatalf("AppendAt: %v", err)
	}
}

func TestAppendAtRewritesCopy(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	var want [][]byte
	var next int64
	for i := range 50 {
		b := newBatch(0, 1+i%3, 20*i, int64(i)) // producer-style: base offset 0
		orig := bytes.Clone(b)
		epoch := int32(7 + i/10)
		if err := l.AppendAt(b, next, epoch); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, orig) {
			t.Fatalf("AppendAt modified the caller's batch %d", i)
		}
		w := bytes.Clone(orig)
		record.SetBaseOffset(w, next)
		record.SetLeaderEpoch(w, epoch)
		want = append(want, w)
		h, _ := record.ParseHeader(w)
		next = h.NextOffset()
	}
	got := readAll(t, l, 0, 1<<20)
	if !bytes.Equal(got, bytes.Join(want, nil)) {
		t.Fatal("stored batches are not the rewritten copies")
	}
	for i, h := range checkBatches(t, got) { // CRCs still valid
		if want := int32(7 + i/10); h.PartitionLeaderEpoch != want {
			t.Fatalf("batch %d epoch %d, want %d", i, h.PartitionLeaderEpoch, want)
		}
	}
	var buf bytes.Buffer
	if n, err := l.CopyTo(&buf, next); err != nil || n != int64(len(got)) || !bytes.Equal(buf.Bytes(), got) {
		t.Fatalf("CopyTo after AppendAt: n=%d err=%v equal=%v", n, err, bytes.Equal(buf.Bytes(), got))
	}
}

func TestCopyTo(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	h := makeHistory(80, 500, 4)
	if err := l.Reset(500); err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, h.batches)
	for i := 0; i <= len(h.batches); i++ {
		var buf bytes.Buffer
		n, err := l.CopyTo(&buf, h.end(i))
		if err != nil {
			t.Fatalf("CopyTo(%d): %v", h.end(i), err)
		}
		if want := h.concat(0, i); n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("CopyTo(%d) wrote %d bytes, want batches [0, %d) (%d bytes)", h.end(i), n, i, len(want))
		}
	}
	// An offset inside a multi-record batch is not a boundary.
	for i, base := range h.bases {
		if h.end(i+1)-base < 2 {
			continue
		}
		_, err := l.CopyTo(&bytes.Buffer{}, base+1)
		var be *BoundaryError
		if !errors.Is(err, ErrNotBoundary) || !errors.As(err, &be) || be.BatchBase != base || be.BatchNext != h.end(i+1) {
			t.Fatalf("CopyTo(%d) inside batch [%d, %d): %v", base+1, base, h.end(i+1), err)
		}
	}
	for _, end := range []int64{499, h.end(len(h.batches)) + 1} {
		if _, err := l.CopyTo(&bytes.Buffer{}, end); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("CopyTo(%d): %v, want out of range", end, err)
		}
	}
}

func TestBatches(t *testing.T) {
	dir := t.TempDir()
	// Big segments: more headers in one segment than one Batches chunk.
	l := openLog(t, dir, Options{SegmentBytes: 1 << 20, IndexIntervalBytes: 512})
	h := makeHistory(700, 0, 5)
	appendAll(t, l, h.batches[:400])
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{SegmentBytes: 40000, IndexIntervalBytes: 512})
	appendAll(t, l, h.batches[400:]) // and then several small segments
	end := h.end(len(h.batches))
	for _, from := range []int64{0, 1, h.bases[250], h.bases[399] + 1, h.bases[400], h.bases[699], end} {
		i := len(h.batches)
		if from < end {
			i = h.indexOf(from)
		}
		var got []int64
		for hd, err := range l.Batches(from) {
			if err != nil {
				t.Fatalf("Batches(%d): %v", from, err)
			}
			if hd.MaxTimestamp != h.ts[i+len(got)] {
				t.Fatalf("Batches(%d) header %d has timestamp %d", from, len(got), hd.MaxTimestamp)
			}
			got = append(got, hd.BaseOffset)
		}
		if want := h.bases[i:]; !equalInts(got, want) {
			t.Fatalf("Batches(%d) gave %d headers, want %d from batch %d", from, len(got), len(want), i)
		}
	}
	n := 0
	for range l.Batches(0) {
		if n++; n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("early break: %d", n)
	}
	for hd, err := range l.Batches(end + 1) {
		var re *OffsetRangeError
		if !errors.As(err, &re) || re.Offset != end+1 {
			t.Fatalf("Batches past the end yielded %+v, %v", hd, err)
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOffsetForTimestamp(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	h := makeHistory(200, 0, 6)
	appendAll(t, l, h.batches)
	check := func(l *Log) {
		t.Helper()
		lo, hi := h.ts[0], h.ts[0]
		for _, ts := range h.ts {
			lo, hi = min(lo, ts), max(hi, ts)
		}
		for ts := lo - 2; ts <= hi+2; ts++ {
			wantI := -1
			for i, bts := range h.ts {
				if bts >= ts {
					wantI = i
					break
				}
			}
			off, maxTS, ok := l.OffsetForTimestamp(ts)
			switch {
			case wantI < 0 && ok:
				t.Fatalf("OffsetForTimestamp(%d) = %d, want none", ts, off)
			case wantI >= 0 && (!ok || off != h.bases[wantI] || maxTS != h.ts[wantI]):
				t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v; want batch %d at %d with %d", ts, off, maxTS, ok, wantI, h.bases[wantI], h.ts[wantI])
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check(openLog(t, dir, smallOpts())) // indexes loaded from files
}

func TestClosedLog(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	appendAll(t, l, [][]byte{newBatch(0, 1, 1, 1)})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b := newBatch(1, 1, 1, 1)
	for name, err := range map[string]error{
		"Close":      l.Close(),
		"Append":     l.Append(b),
		"AppendAt":   l.AppendAt(b, 1, 0),
		"TruncateTo": l.TruncateTo(0),
		"Reset":      l.Reset(0),
		"Sync":       l.Sync(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if _, err := l.Read(0, 10); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if _, err := l.CopyTo(&bytes.Buffer{}, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("CopyTo after Close: %v", err)
	}
	for _, err := range l.Batches(0) {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Batches after Close: %v", err)
		}
	}
	if _, _, ok := l.OffsetForTimestamp(0); ok {
		t.Error("OffsetForTimestamp after Close found a batch")
	}
}

func TestOpenLogOptions(t *testing.T) {
	for _, o := range []Options{{SegmentBytes: -1}, {SegmentBytes: 1 << 33}, {IndexIntervalBytes: -5}} {
		if _, err := Open(t.TempDir(), o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Open(%+v): %v", o, err)
		}
	}
	dir := filepath.Join(t.TempDir(), "a", "b")
	l := openLog(t, dir, Options{})
	if l.StartOffset() != 0 || l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("new log: start %d end %d size %d", l.StartOffset(), l.EndOffset(), l.Size())
	}
	if got := segmentFiles(t, dir); len(got) != 1 || filepath.Base(got[0]) != "00000000000000000000.log" {
		t.Fatalf("new log files: %v", got)
	}
}

func TestBigBatchGetsOwnSegment(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentBytes: 1000})
	small, big := newBatch(0, 1, 10, 1), newBatch(1, 1, 5000, 2)
	appendAll(t, l, [][]byte{small, big, newBatch(2, 1, 10, 3)})
	if n := len(segmentFiles(t, dir)); n != 3 {
		t.Fatalf("%d segments, want 3 (the big batch alone in the middle)", n)
	}
	if got, err := l.Read(1, 1); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Read big batch: %v", err)
	}
}
