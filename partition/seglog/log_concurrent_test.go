package seglog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentReadersDuringWrites runs readers of every kind while one
// writer appends (rolling segments) and now and then truncates a few
// batches and appends them again. Every read must return whole, valid,
// contiguous batches equal to the ones written at those offsets.
func TestConcurrentReadersDuringWrites(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentBytes: 4000, IndexIntervalBytes: 200})
	h := makeHistory(600, 0, 30)
	want := h.concat(0, len(h.batches))
	pos := make(map[int64]int) // base offset -> byte position in want
	var p int
	for i, b := range h.batches {
		pos[h.bases[i]] = p
		p += len(b)
	}

	var done atomic.Bool
	var reads atomic.Int64 // reads that returned data while the writer ran
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	// verify checks that b holds whole batches equal to those written.
	verify := func(b []byte, from int64) error {
		if len(b) == 0 {
			return nil
		}
		hs, err := splitChecked(b)
		if err != nil {
			return err
		}
		if from < hs[0].BaseOffset || from >= hs[0].NextOffset() {
			return errors.New("read does not start with the batch holding the offset")
		}
		at, ok := pos[hs[0].BaseOffset]
		if !ok || at+len(b) > len(want) || !bytes.Equal(b, want[at:at+len(b)]) {
			return errors.New("read returned bytes that were not written at those offsets")
		}
		return nil
	}
	for r := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for !done.Load() {
				end := l.EndOffset()
				off := rng.Int64N(end + 1)
				switch r {
				case 0, 1:
					b, err := l.Read(off, rng.IntN(3000))
					if err != nil && !errors.Is(err, ErrOffsetOutOfRange) { // a truncation may pass us
						fail(err)
						return
					}
					if err := verify(b, off); err != nil {
						fail(err)
						return
					}
					if len(b) > 0 && !done.Load() {
						reads.Add(1)
					}
				case 2:
					// CopyTo at a boundary known to exist: the end seen just now,
					// unless a truncation removed it meanwhile.
					var buf bytes.Buffer
					_, err := l.CopyTo(&buf, end)
					if errors.Is(err, ErrOffsetOutOfRange) {
						continue
					}
					if err != nil {
						fail(err)
						return
					}
					if !bytes.Equal(buf.Bytes(), want[:buf.Len()]) {
						fail(errors.New("CopyTo output is not a prefix of what was written"))
						return
					}
				case 3:
					var prev int64 = -1
					for hd, err := range l.Batches(off) {
						if errors.Is(err, ErrOffsetOutOfRange) {
							break
						}
						if err != nil {
							fail(err)
							return
						}
						if _, ok := pos[hd.BaseOffset]; !ok || (prev >= 0 && hd.BaseOffset != prev) {
							fail(errors.New("Batches yielded a header out of sequence"))
							return
						}
						prev = hd.NextOffset()
					}
					l.OffsetForTimestamp(int64(rng.IntN(8000)))
				}
			}
		})
	}

	for i := 0; i < len(h.batches); i++ {
		if err := l.Append(h.batches[i]); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			back := i - 7
			if err := l.TruncateTo(h.end(back)); err != nil {
				t.Fatal(err)
			}
			for j := back; j <= i; j++ {
				if err := l.Append(h.batches[j]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	done.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if got := readAll(t, l, 0, 1<<20); !bytes.Equal(got, want) {
		t.Fatal("final log differs")
	}
	if reads.Load() == 0 {
		t.Fatal("no read overlapped the writes; the test proved nothing")
	}
}
