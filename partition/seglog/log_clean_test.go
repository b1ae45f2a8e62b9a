package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/record"
)

// thinned keeps every other batch of a run of whole batches and puts a
// gap where each dropped one was: what a cleaning of it may look like.
func thinned(t *testing.T, data []byte) []byte {
	t.Helper()
	var out []byte
	i := 0
	for rest := data; len(rest) > 0; i++ {
		b, r, h, err := record.Next(rest)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			out = append(out, b...)
		} else {
			out = record.AppendGap(out, h.BaseOffset, h.NextOffset(), h.PartitionLeaderEpoch, h.MaxTimestamp)
		}
		rest = r
	}
	return out
}

// cleanedLog is a log of small segments whose second and third segments
// were replaced by a thinned copy; it returns the log, the bytes the whole
// log must now read as, and the replaced range.
func cleanedLog(t *testing.T, dir string) (*Log, []byte, int64, int64) {
	t.Helper()
	h := makeHistory(120, 0, 7)
	l := openLog(t, dir, smallOpts())
	appendAll(t, l, h.batches)
	segs := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("%d segments, want at least 5", len(segs))
	}
	base, next := segs[1].Base, segs[2].Next
	var old []byte
	for _, s := range segs[1:3] {
		b, n, err := sealedBytes(l, s.Base)
		if err != nil || n != s.Next {
			t.Fatalf("sealedBytes(%d): next %d, %v", s.Base, n, err)
		}
		old = append(old, b...)
	}
	repl := thinned(t, old)
	if err := l.ReplaceSegments(base, next, repl); err != nil {
		t.Fatalf("ReplaceSegments: %v", err)
	}
	all := h.concat(0, len(h.batches))
	want := bytes.Replace(all, old, repl, 1)
	return l, want, base, next
}

// After a swap the log reads as the replacement in its range and as before
// elsewhere, its end unchanged, and so again after a reopen.
func TestReplaceSegmentsReadsBackAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	l, want, base, _ := cleanedLog(t, dir)
	end := l.EndOffset()
	if got := readAll(t, l, 0, 700); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d", len(got), len(want))
	}
	if got := readAll(t, l, base+1, 700); len(got) == 0 {
		t.Fatal("a read inside the replaced range returned nothing")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, smallOpts())
	if got := readAll(t, l, 0, 700); !bytes.Equal(got, want) || l.EndOffset() != end {
		t.Fatalf("after reopen: %d bytes (want %d), end %d (want %d)", len(got), len(want), l.EndOffset(), end)
	}
}

// Bytes that do not span the range in whole batches, or a range that is
// not whole sealed segments, are refused and change nothing.
func TestReplaceSegmentsRefuses(t *testing.T) {
	l := openLog(t, t.TempDir(), smallOpts())
	h := makeHistory(60, 0, 3)
	appendAll(t, l, h.batches)
	segs := l.Segments()
	b, next, err := sealedBytes(l, segs[0].Base)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.ReplaceSegments(0, next+1, b); !errors.Is(err, ErrBadReplacement) {
		t.Fatalf("a replacement ending short: %v, want ErrBadReplacement", err)
	}
	if err := l.ReplaceSegments(0, next, b[:len(b)-1]); !errors.Is(err, ErrBadReplacement) {
		t.Fatalf("a torn replacement: %v, want ErrBadReplacement", err)
	}
	active := segs[len(segs)-1]
	gap := record.AppendGap(nil, active.Base, l.EndOffset(), -1, 0)
	if err := l.ReplaceSegments(active.Base, l.EndOffset(), gap); !errors.Is(err, ErrNotBoundary) {
		t.Fatalf("replacing the active segment: %v, want ErrNotBoundary", err)
	}
	if got := readAll(t, l, 0, 1000); !bytes.Equal(got, h.concat(0, len(h.batches))) {
		t.Fatal("a refused replacement changed the log")
	}
}

// A crash after the swap was decided (the swap file renamed into place)
// but before the old segments went: Open finishes it. A crash before:
// the cleaned file is deleted and the old segments stay.
func TestReplaceSegmentsCrash(t *testing.T) {
	dir := t.TempDir()
	h := makeHistory(120, 0, 7)
	l := openLog(t, dir, smallOpts())
	appendAll(t, l, h.batches)
	segs := l.Segments()
	old, next, err := sealedBytes(l, segs[1].Base)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	all := h.concat(0, len(h.batches))
	repl := thinned(t, old)

	before := copyDir(t, dir)
	if err := os.WriteFile(filepath.Join(before, segmentName(segs[1].Base, cleanedSuffix)), repl[:len(repl)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, before, smallOpts())
	if got := readAll(t, l, 0, 1000); !bytes.Equal(got, all) {
		t.Fatal("an unfinished cleaning changed the log")
	}
	if _, err := os.Stat(filepath.Join(before, segmentName(segs[1].Base, cleanedSuffix))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the cleaned file is still there: %v", err)
	}

	decided := copyDir(t, dir)
	if err := os.WriteFile(filepath.Join(decided, swapName(segs[1].Base, next)), repl, 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, decided, smallOpts())
	if got := readAll(t, l, 0, 1000); !bytes.Equal(got, bytes.Replace(all, old, repl, 1)) {
		t.Fatal("an interrupted swap was not finished")
	}
}

// On a file system that loses what was not synced, a crash at each file
// operation of a ReplaceSegments (and after its last, with a seeded
// prefix of the unsynced changes kept) leaves, once the log is opened
// again, either the old bytes or the cleaned bytes, whole: never a mix,
// never a segment lost. So for a replacement of one segment (one file)
// and of four, whose result passes a segment and goes in parts.
func TestReplaceSegmentsCrashAtEveryStep(t *testing.T) {
	h := makeHistory(120, 0, 11)
	all := h.concat(0, len(h.batches))
	const dir = "/log"
	for _, span := range []int{1, 4} {
		t.Run(fmt.Sprintf("segments=%d", span), func(t *testing.T) {
			setup := func(m *vfs.MemFS) (l *Log, base, next int64, old, repl []byte) {
				t.Helper()
				opts := smallOpts()
				opts.FS = m
				l = openLog(t, dir, opts)
				appendAll(t, l, h.batches)
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
				segs := l.Segments()
				for _, s := range segs[1 : 1+span] {
					b, _, err := sealedBytes(l, s.Base)
					if err != nil {
						t.Fatal(err)
					}
					old = append(old, b...)
				}
				return l, segs[1].Base, segs[span].Next, old, thinned(t, old)
			}
			m := vfs.NewStrictMem()
			l, base, next, old, repl := setup(m)
			cleaned := bytes.Replace(all, old, repl, 1)
			ops := m.Ops()
			if err := l.ReplaceSegments(base, next, repl); err != nil {
				t.Fatal(err)
			}
			steps := m.Ops() - ops
			parts := 0
			for _, s := range l.Segments() {
				if s.Base >= base && s.Next <= next {
					parts++
				}
			}
			if wantMany := int64(len(repl)) > smallOpts().SegmentBytes; wantMany != (parts > 1) {
				t.Fatalf("%d bytes went in %d parts (segments of %d)", len(repl), parts, smallOpts().SegmentBytes)
			}
			l.Close()
			became := crashEverySwapStep(t, steps, func(k int64) []byte {
				m := vfs.NewStrictMemSeeded(uint64(k))
				l, base, next, _, repl := setup(m)
				if k <= steps {
					m.CrashAt(m.Ops() + k)
				}
				err := l.ReplaceSegments(base, next, repl)
				if k <= steps && err == nil {
					t.Fatalf("step %d of %d: the armed crash did not fail the swap", k, steps)
				}
				m.Crash()
				l.Close()
				m.Restart()
				opts := smallOpts()
				opts.FS = m
				return readAll(t, openLog(t, dir, opts), 0, 1<<20)
			}, all, cleaned)
			t.Logf("%d crash points in a swap of %d parts, each recovered whole; %d of them already cleaned", steps+1, parts, became)
		})
	}
}

// crashEverySwapStep runs crash(k) for each of steps+1 crash points and
// checks that each left the old bytes or the cleaned ones (the cleaned
// after the last), some of each; it returns how many were cleaned.
func crashEverySwapStep(t *testing.T, steps int64, crash func(k int64) []byte, all, cleaned []byte) int64 {
	t.Helper()
	became := int64(0)
	for k := int64(1); k <= steps+1; k++ {
		got := crash(k)
		switch {
		case bytes.Equal(got, cleaned):
			became++
		case k > steps:
			t.Fatalf("a crash after a completed swap lost it: %d bytes, want the cleaned %d", len(got), len(cleaned))
		case !bytes.Equal(got, all):
			t.Fatalf("crash at step %d of %d: the log holds %d bytes, neither the old %d nor the cleaned %d",
				k, steps, len(got), len(all), len(cleaned))
		}
	}
	if became == 0 || became > steps {
		t.Fatalf("%d of %d crash points ended cleaned: want some old, some cleaned", became, steps+1)
	}
	return became
}

// A replacement spanning more offsets than a segment may (math.MaxUint32
// past its base: gaps of removed batches make a few bytes span billions)
// goes in parts, as appends roll, and reads back whole after a reopen.
// Written as one file, its index could not hold the later batches, and
// the swapped segment did not scan.
func TestReplacementPastASegmentsOffsets(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{Logger: smallOpts().Logger})
	first := newBatch(0, 1, 10, 1000)
	gap := record.AppendGap(nil, 1, 7_000_000_001, 0, 1000) // four batches
	last := newBatch(7_000_000_001, 1, 10, 1000)
	var all []byte
	for _, b := range append([][]byte{first}, splitBatches(t, gap)...) {
		appendAll(t, l, [][]byte{b})
		all = append(all, b...)
	}
	if err := l.RollBefore(l.EndOffset()); err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, [][]byte{last})
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments: the appends did not roll on the offsets", len(segs))
	}
	sealed := segs[len(segs)-2]
	if err := l.ReplaceSegments(0, sealed.Next, all); err != nil {
		t.Fatalf("ReplaceSegments: %v", err)
	}
	want := append(append([]byte(nil), all...), last...)
	if got := readAll(t, l, 0, 1<<20); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes after the swap, want %d", len(got), len(want))
	}
	l.Close()
	if got := readAll(t, openLog(t, dir, Options{Logger: smallOpts().Logger}), 0, 1<<20); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes after a reopen, want %d", len(got), len(want))
	}
}

// splitBatches is the batches of data, each its own slice.
func splitBatches(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for b, err := range record.Batches(data) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
