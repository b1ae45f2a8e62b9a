package logging

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// RateLimitOptions configure a RateLimiter.
type RateLimitOptions struct {
	// Burst is how many lines of one kind pass per Interval; the rest are
	// counted, and one line at the end of the interval says how many.
	// Zero or less: no limit.
	Burst int
	// Interval is the length of a counting window. Default 10s.
	Interval time.Duration
	// MaxKinds bounds the kinds counted apart in a window (default 1024);
	// lines of kinds past it share one allowance of Burst.
	MaxKinds int
	// KindKeys are the attributes, added with Logger.With, that name the
	// logger a line comes from; with its level and message they make its
	// kind. Other attributes (a partition, a peer, an error) do not, so
	// that the same line from thousands of partitions is one kind.
	// Default "logger" and "component".
	KindKeys []string
}

// Defaults of RateLimitOptions.
const (
	DefaultRateInterval = 10 * time.Second
	DefaultRateMaxKinds = 1024
)

// RateLimiter wraps a slog.Handler so that a storm of repeated lines
// (an election per partition, a failed heartbeat per group) cannot fill
// the disk: per kind of line (level, message and logger, see
// RateLimitOptions.KindKeys) the first Burst lines of a window pass, the
// rest are dropped and counted, and when the window ends one line per
// kind reports the count, with the attributes of the first line dropped
// as a sample. A window opens at the first line after the last one
// closed.
//
// It starts no goroutine of its own beyond a timer that fires at the end
// of a window with drops; Close stops it and reports what is pending.
type RateLimiter struct {
	inner    slog.Handler
	burst    int
	interval time.Duration
	maxKinds int
	kindKeys []string

	mu     sync.Mutex // guards everything below
	start  time.Time  // the window's start; zero while none is open
	kinds  map[kindKey]*kindCount
	order  []*kindCount // kinds in the order of their first line, for summaries
	other  kindCount    // lines of kinds past maxKinds
	timer  *time.Timer  // fires at the end of a window with drops; nil if none
	closed bool
}

// kindKey is one kind of line.
type kindKey struct {
	level slog.Level
	msg   string
	kind  string // the kind attributes of the logger
}

// kindCount is what a window saw of one kind.
type kindCount struct {
	lines   int          // lines seen
	dropped int          // lines dropped
	sample  slog.Record  // the first line dropped
	h       slog.Handler // the handler it came through, with its attributes
}

// NewRateLimiter wraps inner. With o.Burst <= 0 its Handler is inner.
func NewRateLimiter(inner slog.Handler, o RateLimitOptions) *RateLimiter {
	if o.Interval <= 0 {
		o.Interval = DefaultRateInterval
	}
	if o.MaxKinds <= 0 {
		o.MaxKinds = DefaultRateMaxKinds
	}
	if o.KindKeys == nil {
		o.KindKeys = []string{"logger", "component"}
	}
	return &RateLimiter{inner: inner, burst: o.Burst, interval: o.Interval, maxKinds: o.MaxKinds,
		kindKeys: o.KindKeys, kinds: map[kindKey]*kindCount{}}
}

// Handler is the limited handler.
func (r *RateLimiter) Handler() slog.Handler {
	if r.burst <= 0 {
		return r.inner
	}
	h := &limitedHandler{r: r, inner: r.inner, kind: make([]string, len(r.kindKeys))}
	h.key = h.kindString()
	return h
}

// Close reports the lines dropped in the open window and stops the
// timer; later lines all pass.
func (r *RateLimiter) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	out := r.rollLocked(time.Now(), false)
	r.mu.Unlock()
	emit(out)
}

// flush closes the window if it has ended, reporting its drops; the timer
// runs it.
func (r *RateLimiter) flush() {
	r.mu.Lock()
	var out []summary
	if !r.closed && !r.start.IsZero() && !time.Now().Before(r.start.Add(r.interval)) {
		out = r.rollLocked(time.Now(), true)
	}
	r.mu.Unlock()
	emit(out)
}

// allow counts a line of kind k and tells whether it passes.
func (r *RateLimiter) allow(h *limitedHandler, rec slog.Record, k kindKey) (bool, []summary) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return true, nil
	}
	now := time.Now()
	var out []summary
	if !r.start.IsZero() && !now.Before(r.start.Add(r.interval)) {
		out = r.rollLocked(now, true) // the timer is late, or was not armed
	}
	if r.start.IsZero() {
		r.start = now
	}
	c := r.kinds[k]
	if c == nil {
		c = &r.other
		if len(r.kinds) < r.maxKinds {
			c = &kindCount{}
			r.kinds[k] = c
			r.order = append(r.order, c)
		}
	}
	c.lines++
	if c.lines <= r.burst {
		return true, out
	}
	if c.dropped++; c.dropped == 1 {
		c.sample, c.h = rec.Clone(), h.inner
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(r.start.Add(r.interval).Sub(now), r.flush)
	}
	return false, out
}

// summary is one line reporting drops, and the handler it goes to.
type summary struct {
	h   slog.Handler
	rec slog.Record
}

// rollLocked ends the window at now and returns its summaries, in the
// order the kinds first appeared (the other kinds last). ended says the
// window ran its full interval. The caller holds mu and emits them
// without it.
func (r *RateLimiter) rollLocked(now time.Time, ended bool) []summary {
	if r.start.IsZero() {
		return nil
	}
	span := r.interval
	if !ended {
		span = now.Sub(r.start).Round(time.Millisecond)
	}
	var out []summary
	add := func(c *kindCount, msg string) {
		if c.dropped == 0 {
			return
		}
		rec := slog.NewRecord(now, c.sample.Level, fmt.Sprintf(msg, c.sample.Message, c.dropped, span), 0)
		rec.AddAttrs(slog.Int("repeated", c.dropped))
		c.sample.Attrs(func(a slog.Attr) bool { rec.AddAttrs(a); return true })
		out = append(out, summary{h: c.h, rec: rec})
	}
	for _, c := range r.order {
		add(c, "%s (repeated %d more times in the last %v)")
	}
	add(&r.other, "%s (and %d more lines of other kinds in the last %v: too many kinds to count apart)")
	clear(r.kinds)
	clear(r.order) // drop the samples' references
	r.order, r.other, r.start = r.order[:0], kindCount{}, time.Time{}
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	return out
}

func emit(out []summary) {
	for _, s := range out {
		_ = s.h.Handle(context.Background(), s.rec) // nowhere to report a failed log write
	}
}

// limitedHandler is a RateLimiter's handler with the attributes and
// groups of one logger. Immutable.
type limitedHandler struct {
	r     *RateLimiter
	inner slog.Handler
	kind  []string // the values of r.kindKeys given to this logger, "" if none
	group string   // the groups opened, dot-separated
	key   string   // kind and group as kindKey.kind
}

func (h *limitedHandler) kindString() string { return h.group + "|" + strings.Join(h.kind, "|") }

func (h *limitedHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *limitedHandler) Handle(ctx context.Context, rec slog.Record) error {
	k := kindKey{level: rec.Level, msg: rec.Message, kind: h.key}
	pass, out := h.r.allow(h, rec, k)
	emit(out)
	if !pass {
		return nil
	}
	return h.inner.Handle(ctx, rec)
}

func (h *limitedHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.inner = h.inner.WithAttrs(as)
	cloned := false
	for _, a := range as {
		i := slices.Index(h.r.kindKeys, a.Key)
		if i < 0 || h.group != "" {
			continue // a kind key inside a group is just an attribute
		}
		if !cloned {
			c.kind, cloned = slices.Clone(h.kind), true
		}
		c.kind[i] = a.Value.String()
	}
	c.key = c.kindString()
	return &c
}

func (h *limitedHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.inner = h.inner.WithGroup(name)
	c.group = h.group + name + "."
	c.key = c.kindString()
	return &c
}
