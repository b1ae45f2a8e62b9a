package logging

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// captured is one line a handler received.
type captured struct {
	at    time.Time
	level slog.Level
	msg   string
	attrs map[string]string // the logger's and the line's, by key
}

// collector is a slog.Handler that keeps every line, with the attributes
// given to its logger.
type collector struct {
	mu    *sync.Mutex
	lines *[]captured
	attrs []slog.Attr
}

func newCollector() *collector { return &collector{mu: &sync.Mutex{}, lines: &[]captured{}} }

func (c *collector) Enabled(context.Context, slog.Level) bool { return true }

func (c *collector) Handle(_ context.Context, r slog.Record) error {
	line := captured{at: r.Time, level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range c.attrs {
		line.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { line.attrs[a.Key] = a.Value.String(); return true })
	c.mu.Lock()
	*c.lines = append(*c.lines, line)
	c.mu.Unlock()
	return nil
}

func (c *collector) WithAttrs(as []slog.Attr) slog.Handler {
	d := *c
	d.attrs = append(append([]slog.Attr(nil), c.attrs...), as...)
	return &d
}

func (c *collector) WithGroup(string) slog.Handler { return c } // unused

func (c *collector) take() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := *c.lines
	*c.lines = nil
	return out
}

// summaries splits lines into those reporting drops and the rest, and
// sums the drops reported.
func summaries(lines []captured) (sums []captured, rest []captured, dropped int) {
	for _, l := range lines {
		if n, ok := l.attrs["repeated"]; ok {
			var k int
			fmt.Sscan(n, &k)
			dropped += k
			sums = append(sums, l)
		} else {
			rest = append(rest, l)
		}
	}
	return sums, rest, dropped
}

// TestRateLimitAggregatesAStorm: 100,000 lines of one kind from 1,000
// partitions (each its own logger, as the node's raft groups are) give
// the burst and, when the window ends and not before, one line saying how
// many more there were, with a partition's attributes as a sample.
func TestRateLimitAggregatesAStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newCollector()
		rl := NewRateLimiter(out, RateLimitOptions{Burst: 20, Interval: 10 * time.Second})
		defer rl.Close()
		root := slog.New(rl.Handler()).With("node", 1)
		parts := make([]*slog.Logger, 1000)
		for i := range parts {
			parts[i] = root.With("partition", fmt.Sprintf("t-%d", i)).With("logger", "raft")
		}
		start := time.Now()
		for i := range 100_000 {
			parts[i%1000].Error("failed to heartbeat to", "peer", "127.0.0.1:9193")
		}
		if got := out.take(); len(got) != 20 {
			t.Fatalf("%d lines during the storm, want the burst of 20", len(got))
		}
		time.Sleep(10*time.Second - time.Millisecond)
		synctest.Wait()
		if got := out.take(); len(got) != 0 {
			t.Fatalf("%d lines before the window ended: %+v", len(got), got[0])
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		got := out.take()
		if len(got) != 1 {
			t.Fatalf("%d lines at the window's end, want one summary", len(got))
		}
		s := got[0]
		want := "failed to heartbeat to (repeated 99980 more times in the last 10s)"
		if s.msg != want || s.level != slog.LevelError || s.attrs["repeated"] != "99980" || !s.at.Equal(start.Add(10*time.Second)) {
			t.Fatalf("summary %q at %v, level %v, attrs %v; want %q at 10s", s.msg, s.at.Sub(start), s.level, s.attrs, want)
		}
		if s.attrs["logger"] != "raft" || s.attrs["partition"] != "t-20" || s.attrs["peer"] != "127.0.0.1:9193" || s.attrs["node"] != "1" {
			t.Fatalf("summary attributes %v, want the first dropped line's", s.attrs)
		}
	})
}

// TestRateLimitBoundsALongStorm: a storm spread over a minute gives at
// most the burst and one summary per window, and the lines passed plus
// the drops reported are every line logged.
func TestRateLimitBoundsALongStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newCollector()
		rl := NewRateLimiter(out, RateLimitOptions{Burst: 5, Interval: 10 * time.Second})
		l := slog.New(rl.Handler()).With("logger", "raft")
		const total = 60_000
		for i := range total {
			l.With("partition", i%1000).Warn("Election timeout reached, restarting election")
			if i%1000 == 999 {
				time.Sleep(time.Second) // 60 s in all
			}
		}
		synctest.Wait() // a window's timer may be emitting its summary
		rl.Close()
		sums, rest, dropped := summaries(out.take())
		if windows := 6; len(rest) > 5*windows || len(sums) > windows {
			t.Fatalf("%d lines and %d summaries for a 60 s storm in 10 s windows of 5 lines", len(rest), len(sums))
		}
		if len(rest)+dropped != total {
			t.Fatalf("%d lines passed and %d reported dropped, want %d in all", len(rest), dropped, total)
		}
	})
}

// TestRateLimitKindsApart: distinct messages, levels and loggers are
// distinct kinds, each with its own burst, and pass when each stays
// within it; the partition a line names is not part of its kind.
func TestRateLimitKindsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newCollector()
		rl := NewRateLimiter(out, RateLimitOptions{Burst: 3})
		defer rl.Close()
		root := slog.New(rl.Handler())
		for i := range 50 {
			for p := range 3 {
				root.With("partition", p).Info(fmt.Sprintf("message %d", i))
			}
		}
		if got := out.take(); len(got) != 150 {
			t.Fatalf("%d of 150 distinct lines passed", len(got))
		}
		for _, l := range []*slog.Logger{root.With("logger", "raft"), root.With("logger", "pebble"), root.With("component", "fsm")} {
			for range 3 {
				l.Warn("same text")
				l.Error("same text")
			}
		}
		if got := out.take(); len(got) != 18 {
			t.Fatalf("%d of 18 lines of six kinds passed", len(got))
		}
		// A logger renamed (hclog's ResetNamed gives a new "logger")
		// is a new kind; a "logger" attribute inside a group is not.
		named := root.With("logger", "raft").With("logger", "raft.snapshot")
		grouped := root.WithGroup("g").With("logger", "x")
		for range 4 {
			named.Warn("same text")
			grouped.Info("grouped")
		}
		if got := out.take(); len(got) != 6 {
			t.Fatalf("%d lines passed, want 3 of each of two new kinds", len(got))
		}
	})
}

// TestRateLimitBoundsKinds: a storm of ever new messages keeps at most
// MaxKinds kinds; the others share one burst, and their drops are
// reported in one line.
func TestRateLimitBoundsKinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newCollector()
		rl := NewRateLimiter(out, RateLimitOptions{Burst: 2, MaxKinds: 100})
		l := slog.New(rl.Handler())
		for i := range 10_000 {
			l.Error(fmt.Sprintf("error %d", i))
			if n := rl.kindsCounted(); n > 100 {
				t.Fatalf("%d kinds counted, MaxKinds 100", n)
			}
		}
		passed := len(out.take())
		if passed != 100+2 {
			t.Fatalf("%d lines passed, want one per kind counted and the others' burst of 2", passed)
		}
		time.Sleep(DefaultRateInterval)
		synctest.Wait()
		sums, _, dropped := summaries(out.take())
		if len(sums) != 1 || dropped != 10_000-passed || !strings.Contains(sums[0].msg, "other kinds") {
			t.Fatalf("summaries %+v, want one for the %d lines of other kinds dropped", sums, 10_000-passed)
		}
		if n := rl.kindsCounted(); n != 0 {
			t.Fatalf("%d kinds kept after the window", n)
		}
		rl.Close()
	})
}

// kindsCounted is the size of the kind table.
func (r *RateLimiter) kindsCounted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(len(r.kinds), len(r.order))
}

// TestRateLimitCloseReportsPending: Close reports the drops of the open
// window at once, over the time it ran, and then lets every line pass.
func TestRateLimitCloseReportsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newCollector()
		rl := NewRateLimiter(out, RateLimitOptions{Burst: 1})
		l := slog.New(rl.Handler())
		for range 5 {
			l.Warn("again")
		}
		time.Sleep(3 * time.Second)
		rl.Close()
		sums, rest, dropped := summaries(out.take())
		if len(rest) != 1 || len(sums) != 1 || dropped != 4 || sums[0].msg != "again (repeated 4 more times in the last 3s)" {
			t.Fatalf("lines %+v and summaries %+v at Close", rest, sums)
		}
		for range 5 {
			l.Warn("again")
		}
		if got := out.take(); len(got) != 5 {
			t.Fatalf("%d of 5 lines passed after Close", len(got))
		}
	})
}

// TestRateLimitThroughHCLog: raft's lines, through the hclog adapter of
// each partition's logger, are one kind across partitions.
func TestRateLimitThroughHCLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newCollector()
		rl := NewRateLimiter(out, RateLimitOptions{Burst: 10})
		defer rl.Close()
		root := slog.New(rl.Handler())
		for p := range 500 {
			HCLog(root.With("partition", p), "raft", slog.LevelWarn).Error("failed to contact", "server-id", 2)
		}
		if got := out.take(); len(got) != 10 {
			t.Fatalf("%d lines from 500 partitions' raft, want the burst of 10", len(got))
		}
		time.Sleep(DefaultRateInterval)
		synctest.Wait()
		if sums, _, dropped := summaries(out.take()); len(sums) != 1 || dropped != 490 {
			t.Fatalf("summaries %+v, want one of 490", sums)
		}
	})
}

// TestRateLimitOff: a burst of 0 is no limit at all.
func TestRateLimitOff(t *testing.T) {
	out := newCollector()
	rl := NewRateLimiter(out, RateLimitOptions{})
	if rl.Handler() != slog.Handler(out) {
		t.Fatal("a limiter without a burst wraps its handler")
	}
}
