package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// walFsync keeps Pebble's counts exact: each kept bound is one of
// Pebble's, converted from nanoseconds to seconds.
func TestWALFsyncConversion(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ns",
		Buckets: append(prometheus.LinearBuckets(0, 100e3, 50), prometheus.ExponentialBucketsRange(5e6, 10e9, 50)...)})
	for _, ns := range []float64{50e3, 150e3, 900e3, 3e6, 40e6, 2e9, 20e9} {
		h.Observe(ns)
	}
	var m dto.Metric
	if err := walFsync(h).Write(&m); err != nil {
		t.Fatal(err)
	}
	got := m.GetHistogram()
	if got.GetSampleCount() != 7 || got.GetSampleSum() < 22.04 || got.GetSampleSum() > 22.05 {
		t.Fatalf("count %d sum %v, want 7 and 22.0441", got.GetSampleCount(), got.GetSampleSum())
	}
	want := map[float64]uint64{0.0001: 1, 0.0003: 2, 0.001: 3, 0.005: 4}
	seen := 0
	for _, b := range got.GetBucket() {
		if n, ok := want[b.GetUpperBound()]; ok {
			seen++
			if b.GetCumulativeCount() != n {
				t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), n)
			}
		}
	}
	if bs := got.GetBucket(); len(bs) == 0 || bs[len(bs)-1].GetCumulativeCount() != 6 {
		t.Errorf("last bucket %v, want all but the 20 s sample", bs)
	}
	if seen != len(want) {
		t.Errorf("found %d of the bounds %v in %v", seen, want, got.GetBucket())
	}
	if walFsync(nil) != nil {
		t.Error("a nil histogram gave a metric")
	}
}
