// Package hist is a concurrent latency histogram with a bounded relative
// error, for the bench command.
//
// A caller's duties: create one with New, call Record from any number of
// goroutines (it is lock-free), and read it with Snapshot once the writers
// are done or while they run (a snapshot taken during writes is a
// consistent-enough view: each bucket is read atomically). Values are
// durations; negative ones count as zero.
//
// Buckets are log-linear: values below 2^subBits nanoseconds are exact,
// larger ones fall into 2^subBits buckets per power of two, so a reported
// quantile is within 1/2^subBits (0.8%) of the true one.
package hist

import (
	"math/bits"
	"sync/atomic"
	"time"
)

const (
	subBits    = 7
	subBuckets = 1 << subBits
	// maxExp covers values up to 2^(maxExp+subBits) ns, about 9 hours.
	maxExp     = 38
	numBuckets = (maxExp + 2) * subBuckets
)

// Histogram counts durations. The zero value is not usable; call New.
type Histogram struct {
	counts []atomic.Uint64
	n      atomic.Uint64
	sum    atomic.Uint64 // nanoseconds
	max    atomic.Int64  // nanoseconds
}

// New returns an empty histogram.
func New() *Histogram {
	return &Histogram{counts: make([]atomic.Uint64, numBuckets)}
}

// bucket returns the bucket index of v nanoseconds (v >= 0).
func bucket(v int64) int {
	if v < subBuckets {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - subBits - 1 // v>>e is in [subBuckets, 2*subBuckets)
	if e > maxExp {
		return numBuckets - 1
	}
	return (e+1)*subBuckets + int(v>>e) - subBuckets
}

// bounds returns the smallest and largest value of bucket i.
func bounds(i int) (lo, hi int64) {
	if i < subBuckets {
		return int64(i), int64(i)
	}
	e := i/subBuckets - 1
	m := int64(i%subBuckets + subBuckets)
	return m << e, (m+1)<<e - 1
}

// Record adds one duration.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucket(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(uint64(v))
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
}

// Snapshot is a point-in-time copy of a histogram.
type Snapshot struct {
	counts []uint64
	Count  uint64
	Sum    time.Duration
	Max    time.Duration
}

// Snapshot copies the histogram's counts.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{counts: make([]uint64, numBuckets)}
	for i := range h.counts {
		c := h.counts[i].Load()
		s.counts[i] = c
		s.Count += c
	}
	s.Sum = time.Duration(h.sum.Load())
	s.Max = time.Duration(h.max.Load())
	return s
}

// Quantile returns the value at quantile q (0 < q <= 1): the midpoint of
// the bucket holding the ceil(q*Count)-th smallest value, capped at Max.
// It is 0 for an empty snapshot.
func (s Snapshot) Quantile(q float64) time.Duration {
	if s.Count == 0 {
		return 0
	}
	rank := uint64(q * float64(s.Count))
	if float64(rank) < q*float64(s.Count) {
		rank++
	}
	rank = max(rank, 1)
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen >= rank {
			lo, hi := bounds(i)
			return min(time.Duration(lo+(hi-lo)/2), s.Max)
		}
	}
	return s.Max
}

// Mean returns the average value, 0 for an empty snapshot.
func (s Snapshot) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / time.Duration(s.Count)
}
