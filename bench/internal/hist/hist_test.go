package hist

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// Every value lies within its own bucket's bounds, and buckets tile the
// number line without gaps: the bucketing is a correct partition.
func TestBucketBoundsContainValue(t *testing.T) {
	prevHi := int64(-1)
	for i := 0; i < numBuckets-1; i++ {
		lo, hi := bounds(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		for _, v := range []int64{lo, hi, lo + (hi-lo)/2} {
			if got := bucket(v); got != i {
				t.Fatalf("bucket(%d) = %d, want %d (bounds %d..%d)", v, got, i, lo, hi)
			}
		}
		prevHi = hi
	}
}

// Quantiles agree with the exact order statistics of the same data to
// within the promised relative error.
func TestQuantileMatchesExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := New()
	vals := make([]int64, 0, 100000)
	for range 100000 {
		// log-uniform between 1 µs and 1 s, like latencies
		v := int64(1000 * float64(1e6) * r.Float64() * r.Float64() * r.Float64())
		vals = append(vals, v)
		h.Record(time.Duration(v))
	}
	slices.Sort(vals)
	s := h.Snapshot()
	if s.Count != uint64(len(vals)) {
		t.Fatalf("count %d, want %d", s.Count, len(vals))
	}
	if s.Max != time.Duration(vals[len(vals)-1]) {
		t.Fatalf("max %v, want %v", s.Max, time.Duration(vals[len(vals)-1]))
	}
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 1} {
		idx := int(q*float64(len(vals))+0.999999) - 1
		want := float64(vals[idx])
		got := float64(s.Quantile(q))
		if d := (got - want) / want; d > 1.0/subBuckets || d < -1.0/subBuckets {
			t.Errorf("q%v = %v, exact %v (rel err %.4f)", q, got, want, d)
		}
	}
}

func TestEmptyAndSmall(t *testing.T) {
	h := New()
	if q := h.Snapshot().Quantile(0.99); q != 0 {
		t.Fatalf("empty quantile %v", q)
	}
	h.Record(-5)
	h.Record(3)
	h.Record(7)
	s := h.Snapshot()
	if got := s.Quantile(0.5); got != 3 {
		t.Fatalf("median of {0,3,7} = %v, want 3ns", got)
	}
	if got := s.Quantile(0.01); got != 0 {
		t.Fatalf("min of {0,3,7} = %v, want 0 (negative clamps)", got)
	}
	if s.Mean() != 10/3 {
		t.Fatalf("mean %v", s.Mean())
	}
}

// Concurrent writers lose no counts (run with -race).
func TestConcurrentRecord(t *testing.T) {
	h := New()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 10000 {
				h.Record(time.Duration(g*10000 + i))
			}
		})
	}
	wg.Wait()
	s := h.Snapshot()
	if s.Count != 80000 || s.Max != 79999 {
		t.Fatalf("count %d max %v", s.Count, s.Max)
	}
}
