package replicas

import (
	"math"
	"testing"

	"github.com/minikafka/minikafka-go/partition/seglog"
)

// A cleaning reaches the last stable offset, but not the first segment
// holding a record younger than min.compaction.lag.ms.
func TestCleanablePoint(t *testing.T) {
	segs := []seglog.SegmentInfo{
		{Base: 0, Next: 100, Bytes: 1000, MaxTimestamp: 1000},
		{Base: 100, Next: 200, Bytes: 1000, MaxTimestamp: 5000},
		{Base: 200, Next: 250, Bytes: 500, MaxTimestamp: 9000, Active: true},
	}
	for _, c := range []struct {
		lso, now, lag, want int64
	}{
		{250, 10000, 0, 250},    // no lag: up to the last stable offset
		{150, 10000, 0, 150},    // an open transaction from 150
		{250, 10000, 2000, 200}, // the active segment is younger than 2 s
		{250, 10000, 6000, 100}, // so is the second
		{250, 10000, 9500, 0},   // everything is
	} {
		if got := cleanablePoint(segs, c.lso, c.now, c.lag); got != c.want {
			t.Errorf("lso %d, now %d, lag %d: %d, want %d", c.lso, c.now, c.lag, got, c.want)
		}
	}
	if got := dirtyRatio(segs, 0, 250); got != 1 {
		t.Errorf("nothing cleaned: dirty ratio %v, want 1", got)
	}
	if got := dirtyRatio(segs, 100, 250); got != 0.6 {
		t.Errorf("cleaned to 100: dirty ratio %v, want 0.6", got)
	}
	if got := dirtyRatio(segs, 250, 250); got != 0 {
		t.Errorf("all cleaned: dirty ratio %v, want 0", got)
	}
}

// A cleaning covers at most limit bytes of segments from the log start: it
// stops at the segment that would pass it, and cleans nothing when the
// first one alone does.
func TestBoundedPoint(t *testing.T) {
	segs := []seglog.SegmentInfo{
		{Base: 0, Next: 100, Bytes: 1000},
		{Base: 100, Next: 200, Bytes: 1000},
		{Base: 200, Next: 250, Bytes: 500, Active: true},
	}
	for _, c := range []struct{ start, limit, want int64 }{
		{0, 5000, math.MaxInt64}, // all of it fits
		{0, 1500, 100},           // the second segment would pass
		{150, 1400, 200},         // from the segment holding the start
		{0, 999, 0},              // the first alone passes: nothing
	} {
		if got := boundedPoint(segs, c.start, c.limit); got != c.want {
			t.Errorf("start %d, limit %d: %d, want %d", c.start, c.limit, got, c.want)
		}
	}
}
