package multiraft

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// The first and last index a view keeps as it stores and deletes are
// always the ones Pebble holds, through what raft does to a log (appends,
// a compacted head, a conflicting suffix dropped, a gap after an installed
// snapshot, the whole log dropped) and a concurrent reader.
func TestPebbleViewEdgesFollowTheStore(t *testing.T) {
	v := openTestView(t, pebbleConfig{fs: vfs.NewMem(), logger: logging.Discard()})

	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() { // a reader beside the writer, as raft's snapshot goroutine is
		for {
			select {
			case <-stop:
				return
			default:
				_, err1 := v.FirstIndex()
				_, err2 := v.LastIndex()
				if err := errors.Join(err1, err2); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	defer func() { close(stop); readers.Wait() }()

	rng := rand.New(rand.NewPCG(1, 2))
	var held []uint64 // the indexes the log holds, ascending, by the model
	for step := range 2000 {
		first, last := uint64(1), uint64(0)
		if len(held) > 0 {
			first, last = held[0], held[len(held)-1]
		}
		switch op := rng.IntN(10); {
		case op < 5 || len(held) == 0: // append, after a gap now and then (an installed snapshot)
			next := last + 1 + uint64(rng.IntN(2))*uint64(rng.IntN(20))
			n := uint64(1 + rng.IntN(8))
			if err := v.StoreLogs(testLogs(next, next+n-1)); err != nil {
				t.Fatal(err)
			}
			for i := next; i < next+n; i++ {
				held = append(held, i)
			}
		case op < 8: // a compacted head
			to := first + uint64(rng.IntN(int(last-first+1)))
			if err := v.DeleteRange(first, to); err != nil {
				t.Fatal(err)
			}
			held = slices.DeleteFunc(held, func(i uint64) bool { return i <= to })
		case op < 9: // a conflicting suffix
			from := first + uint64(rng.IntN(int(last-first+1)))
			if err := v.DeleteRange(from, last); err != nil {
				t.Fatal(err)
			}
			held = slices.DeleteFunc(held, func(i uint64) bool { return i >= from })
		default: // the whole log
			if err := v.DeleteRange(first, last); err != nil {
				t.Fatal(err)
			}
			held = held[:0]
		}
		var wantFirst, wantLast uint64
		if len(held) > 0 {
			wantFirst, wantLast = held[0], held[len(held)-1]
		}
		first, err1 := v.FirstIndex()
		last, err2 := v.LastIndex()
		_, storedFirst, storedLast, err3 := v.readSpans()
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if first != wantFirst || last != wantLast || storedFirst != wantFirst || storedLast != wantLast {
			t.Fatalf("step %d: view %d..%d, Pebble holds %d..%d, want %d..%d", step, first, last, storedFirst, storedLast, wantFirst, wantLast)
		}
	}
}

// BenchmarkLogEdges: a group's first and last index as a view keeps
// them, against reading the group's log from Pebble, at twelve partitions' peak: entries of about
// 90 KiB, a memtable holding many groups' range deletions.
func BenchmarkLogEdges(b *testing.B) {
	v := openTestView(b, pebbleConfig{fs: vfs.Default, logger: logging.Discard()})
	data := make([]byte, 90<<10)
	for i := uint64(1); i <= 200; i++ {
		l := testLogs(i, i)[0]
		l.Data = data
		if err := v.StoreLogs([]*raft.Log{l}); err != nil {
			b.Fatal(err)
		}
		if i > 8 {
			if err := v.DeleteRange(i-8, i-8); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := v.edges(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pebble", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, err := v.readSpans(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// openTestView opens a DB of cfg in a temporary directory and its view of
// group "g", both closed when tb ends.
func openTestView(tb testing.TB, cfg pebbleConfig) *pebbleView {
	tb.Helper()
	pl, err := openPebbleLog(tb.TempDir(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := pl.open("g")
	if err != nil {
		_ = pl.release()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := errors.Join(v.Close(), pl.release()); err != nil {
			tb.Error(err)
		}
	})
	return v
}

// A log of more runs than a view keeps (each entry after a gap) still has
// the right edges, read from Pebble each time, and is never taken for an
// empty one.
func TestPebbleViewEdgesOfManyRuns(t *testing.T) {
	v := openTestView(t, pebbleConfig{fs: vfs.Default, logger: logging.Discard()})
	for i := uint64(1); i <= 2*maxLogSpans; i++ {
		if err := v.StoreLogs(testLogs(3*i, 3*i)); err != nil {
			t.Fatal(err)
		}
	}
	v.forget() // as after a start: the view reads Pebble
	for range 2 {
		first, err1 := v.FirstIndex()
		last, err2 := v.LastIndex()
		if err := errors.Join(err1, err2); err != nil || first != 3 || last != 6*maxLogSpans {
			t.Fatalf("edges %d..%d (%v), want 3..%d", first, last, err, 6*maxLogSpans)
		}
	}
	if v.spans.known {
		t.Fatalf("the view keeps %d runs, more than maxLogSpans", len(v.spans.runs))
	}
}
