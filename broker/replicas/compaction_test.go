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

// A whole cleaning covers at most limit bytes of segments from the log start: it
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

// A log whose first dirty record is older than max.compaction.lag.ms is
// overdue: its age is the first timestamp of the batch where the dirty
// A log whose first dirty record is older than max.compaction.lag.ms is
// overdue: its age is the first timestamp of the batch where the dirty
// part begins, in the first segment holding any of it below upTo.
func TestOverdue(t *testing.T) {
	segs := []seglog.SegmentInfo{
		{Base: 0, Next: 100, Bytes: 1000},
		{Base: 100, Next: 200, Bytes: 1000},
		{Base: 200, Next: 250, Bytes: 500, Active: true},
	}
	first := map[int64]int64{0: 1000, 100: 4000, 150: 6000, 200: 8000} // batch start → first timestamp
	var asked []int64
	ts := func(off int64) (int64, bool) {
		asked = append(asked, off)
		v, ok := first[off]
		return v, ok
	}
	for _, c := range []struct {
		dirty, upTo, now, maxLag int64
		want                     bool
		read                     int64 // the offset whose batch is read; -1: none
	}{
		{0, 250, 10000, 5000, true, 0},            // 1000 is older than 5 s
		{100, 250, 10000, 5000, true, 100},        // 4000 too
		{150, 250, 10000, 5000, false, 150},       // 6000 is not
		{150, 250, 12000, 5000, true, 150},        // but is 2 s later
		{200, 200, 100000, 5000, false, -1},       // nothing dirty below upTo
		{0, 250, 10000, math.MaxInt64, false, -1}, // Kafka's default: never
		{0, 250, 10000, -1, false, -1},            // off
		{250, 250, 100000, 1, false, -1},          // all clean
	} {
		asked = nil
		got := overdue(segs, c.dirty, c.upTo, c.now, c.maxLag, ts)
		if got != c.want || (c.read < 0) != (len(asked) == 0) || (c.read >= 0 && (len(asked) != 1 || asked[0] != c.read)) {
			t.Errorf("dirty %d, upTo %d, now %d, max lag %d: %v reading %v, want %v reading %d",
				c.dirty, c.upTo, c.now, c.maxLag, got, asked, c.want, c.read)
		}
	}
}

// The cleaner's lag is dated by the first dirty record below the point a
// cleaning may reach: nothing is read when the dirty part starts at or
// past it (records above an open transaction's start, say), even inside a
// segment that begins below it.
func TestFirstDirtyTimestamp(t *testing.T) {
	segs := []seglog.SegmentInfo{
		{Base: 0, Next: 100, Bytes: 1000},
		{Base: 100, Next: 250, Bytes: 1500, Active: true},
	}
	first := map[int64]int64{0: 1000, 100: 4000, 120: 5000, 220: 9000}
	for _, c := range []struct {
		dirty, upTo int64
		want        int64 // -1: none
	}{
		{0, 250, 1000},
		{120, 250, 5000},
		{100, 150, 4000},
		{220, 200, -1}, // dirty from 220, cleanable to 200: nothing to date
		{200, 200, -1},
		{250, 250, -1},
	} {
		var read []int64
		ts, ok := firstDirtyTimestamp(segs, c.dirty, c.upTo, func(off int64) (int64, bool) {
			read = append(read, off)
			v, ok := first[off]
			return v, ok
		})
		if c.want < 0 && (ok || len(read) > 0) || c.want >= 0 && (!ok || ts != c.want) {
			t.Errorf("dirty %d, upTo %d: %d %v reading %v, want %d", c.dirty, c.upTo, ts, ok, read, c.want)
		}
	}
}
