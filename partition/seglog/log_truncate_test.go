package seglog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

func TestTruncateTo(t *testing.T) {
	h := makeHistory(100, 0, 20)
	src := t.TempDir()
	// Several batches per index interval, so cuts fall inside intervals.
	opts := Options{SegmentBytes: 4000, IndexIntervalBytes: 900}
	l := openLog(t, src, opts)
	appendAll(t, l, h.batches)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := segmentFiles(t, src)
	baseOf := func(i int) int64 {
		b, _ := parseSegmentName(filepath.Base(files[i]), logSuffix)
		return b
	}
	n := len(h.batches)
	for _, tc := range []struct {
		name string
		keep int // batches kept
	}{
		{"inside the last segment", n - 2},
		{"end is a no-op", n},
		{"inside a middle segment", h.indexOf(baseOf(3)) + 2},
		{"at a segment base", h.indexOf(baseOf(4))},
		{"at the last segment's base", h.indexOf(baseOf(len(files) - 1))},
		{"one batch", 1},
		{"at the start", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, src)
			l := openLog(t, dir, opts)
			to := h.end(tc.keep)
			if err := l.TruncateTo(to); err != nil {
				t.Fatalf("TruncateTo(%d): %v", to, err)
			}
			check := func(l *Log, keep int) {
				t.Helper()
				if l.EndOffset() != h.end(keep) || l.StartOffset() != 0 {
					t.Fatalf("start %d end %d, want 0 and %d", l.StartOffset(), l.EndOffset(), h.end(keep))
				}
				if got := readAll(t, l, 0, 1<<20); !bytes.Equal(got, h.concat(0, keep)) {
					t.Fatalf("log holds %d bytes, want %d", len(got), len(h.concat(0, keep)))
				}
				if l.Size() != int64(len(h.concat(0, keep))) || dirBytes(t, dir) != l.Size() {
					t.Fatalf("Size %d, files %d, want %d", l.Size(), dirBytes(t, dir), len(h.concat(0, keep)))
				}
				// The time index forgets the dropped batches.
				for _, ts := range []int64{h.ts[0], 1000 + 10*int64(keep) - 5, 1 << 40} {
					want := -1
					for i := range keep {
						if h.ts[i] >= ts {
							want = i
							break
						}
					}
					off, _, ok := l.OffsetForTimestamp(ts)
					if ok != (want >= 0) || (ok && off != h.bases[want]) {
						t.Fatalf("OffsetForTimestamp(%d) = %d, %v; want batch %d", ts, off, ok, want)
					}
				}
				if _, err := l.Read(h.end(keep)+1, 1); !errors.Is(err, ErrOffsetOutOfRange) {
					t.Fatalf("Read past the new end: %v", err)
				}
			}
			check(l, tc.keep)
			// The active segment's index is what a fresh scan would build.
			truncated := slices.Clone(l.segs[len(l.segs)-1].idx.entries)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, dir, opts)
			if rebuilt := l.segs[len(l.segs)-1].idx.entries; !slices.Equal(truncated, rebuilt) {
				t.Fatalf("index after TruncateTo:\n%v\nfresh scan:\n%v", truncated, rebuilt)
			}
			for _, f := range segmentFiles(t, dir) {
				if b, _ := parseSegmentName(filepath.Base(f), logSuffix); b > to {
					t.Fatalf("segment %s after the new end still exists", f)
				}
			}
			// Appends continue at the new end, and everything survives reopen.
			keep := min(tc.keep+3, n)
			appendAll(t, l, h.batches[tc.keep:keep])
			check(l, keep)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			check(openLog(t, dir, opts), keep)
		})
	}
}

func TestTruncateToErrors(t *testing.T) {
	l := openLog(t, t.TempDir(), smallOpts())
	if err := l.Reset(10); err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, [][]byte{newBatch(10, 3, 5, 1), newBatch(13, 4, 5, 2)})
	var be *BoundaryError
	if err := l.TruncateTo(15); !errors.Is(err, ErrNotBoundary) || !errors.As(err, &be) || be.BatchBase != 13 || be.BatchNext != 17 {
		t.Fatalf("TruncateTo inside a batch: %v", err)
	}
	for _, off := range []int64{9, 18} {
		var re *OffsetRangeError
		if err := l.TruncateTo(off); !errors.As(err, &re) || !errors.Is(err, ErrOffsetOutOfRange) || re.Start != 10 || re.End != 17 {
			t.Fatalf("TruncateTo(%d): %v", off, err)
		}
	}
	if l.EndOffset() != 17 {
		t.Fatalf("failed truncations changed the end to %d", l.EndOffset())
	}
}

func TestReset(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	h := makeHistory(50, 0, 21)
	appendAll(t, l, h.batches)
	if err := l.Reset(1000); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 1000 || l.EndOffset() != 1000 || l.Size() != 0 {
		t.Fatalf("after Reset: start %d end %d size %d", l.StartOffset(), l.EndOffset(), l.Size())
	}
	if files := segmentFiles(t, dir); len(files) != 1 {
		t.Fatalf("files after Reset: %v", files)
	}
	if b, err := l.Read(1000, 10); b != nil || err != nil {
		t.Fatalf("Read(1000) on empty log: %d bytes, %v", len(b), err)
	}
	h2 := makeHistory(30, 1000, 22)
	appendAll(t, l, h2.batches)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, smallOpts())
	if l.StartOffset() != 1000 || !bytes.Equal(readAll(t, l, 1000, 1<<20), h2.concat(0, 30)) {
		t.Fatal("reset log did not survive reopen")
	}
	// Reset to the base of an existing segment empties it.
	if err := l.Reset(1000); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 1000 || dirBytes(t, dir) != 0 {
		t.Fatalf("Reset to own base: end %d, %d bytes on disk", l.EndOffset(), dirBytes(t, dir))
	}
	appendAll(t, l, h2.batches[:1])
	if err := l.Reset(-1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Reset(-1): %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 { // one .log and its .index written by Close
		t.Fatalf("files left: %v", ents)
	}
}

func TestSyncThenReopen(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallOpts())
	h := makeHistory(40, 0, 23)
	appendAll(t, l, h.batches[:20])
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(h.end(10)); err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, h.batches[10:40])
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.segs {
		if s.dataDirty || s.indexDirty {
			t.Fatalf("segment %d still dirty after Sync", s.base)
		}
	}
	if l.dirDirty {
		t.Fatal("directory still dirty after Sync")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, smallOpts())
	if !bytes.Equal(readAll(t, l, 0, 1<<20), h.concat(0, 40)) {
		t.Fatal("log differs after Sync and reopen")
	}
}

// Appends go on while Sync waits for the disk (it used to hold the
// writer's lock for the whole fsync, stalling the partition's applies),
// and what they wrote is left dirty for the next Sync.
func TestAppendsProceedDuringSync(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	opts.FlushBytes = -1 // only this test's Syncs run
	inSync, release := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool // the first fsync once armed is held; the others pass
	opts.FS = syncHookFS{vfs.OS, func(f vfs.File) error {
		if armed.CompareAndSwap(true, false) {
			close(inSync)
			<-release
		}
		return f.Sync()
	}}
	l := openLog(t, dir, opts)
	h := makeHistory(30, 0, 7)
	appendAll(t, l, h.batches[:10])
	armed.Store(true)

	synced := make(chan error, 1)
	go func() { synced <- l.Sync() }()
	<-inSync
	// Sync is parked in its first fsync; appending must not wait for it,
	// including a roll to a new segment.
	appendAll(t, l, h.batches[10:30])
	if got := len(segmentFiles(t, dir)); got < 2 {
		t.Fatalf("%d segment files; the history should span several", got)
	}
	close(release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if !l.segs[len(l.segs)-1].dataDirty {
		t.Fatal("the active segment written during Sync is not dirty for the next one")
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.segs {
		if s.dataDirty || s.indexDirty {
			t.Fatalf("segment %d still dirty after the second Sync", s.base)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, smallOpts())
	if !bytes.Equal(readAll(t, l, 0, 1<<20), h.concat(0, 30)) {
		t.Fatal("log differs after Sync and reopen")
	}
}

// dirtySegments counts segments with unsynced data, under the writer's lock.
func dirtySegments(l *Log) int {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	n := 0
	for _, s := range l.segs {
		if s.dataDirty {
			n++
		}
	}
	return n
}

// Past FlushBytes of appends the log syncs itself in the background; with
// FlushBytes negative nothing but Sync and Close ever syncs.
func TestBackgroundFlush(t *testing.T) {
	h := makeHistory(40, 0, 11)
	opts := smallOpts()
	opts.FlushBytes = -1
	off := openLog(t, t.TempDir(), opts)
	appendAll(t, off, h.batches)
	if dirtySegments(off) == 0 {
		t.Fatal("a log without background flushing has no unsynced segment after appends")
	}

	opts.FlushBytes = 1 // every append kicks the flusher
	l := openLog(t, t.TempDir(), opts)
	appendAll(t, l, h.batches)
	deadline := time.Now().Add(10 * time.Second)
	for dirtySegments(l) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d segments still unsynced 10 s after the last append", dirtySegments(l))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
