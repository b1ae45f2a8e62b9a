package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// burstGap is the longest pause between two errors of one class that
// still counts them in the same burst: a client retrying with its usual
// backoff (100 ms) stays in one burst, separate failures do not.
const burstGap = time.Second

// errCounts counts the errors a group or share member saw, by operation
// and class, and keeps for each class the first error whole and its
// longest burst. The class is the Kafka error's name when the error wraps
// one, "timeout", or else the innermost error's message (the first 80
// bytes), prefixed with "group session: " when the client reported a
// failing group session; so a class does not hide the code behind a
// wrapper. Its owner guards it.
type errCounts map[string]*errClass

// errClass is one class of errors: how many, the first one whole, and the
// bursts of them (errors less than burstGap apart).
type errClass struct {
	n          int
	first      string
	burstStart time.Time // the current burst's first error
	last       time.Time // the latest error
	longest    time.Duration
}

func (c errCounts) note(op string, err error) { c.noteAt(op, err, time.Now()) }

func (c errCounts) noteAt(op string, err error, now time.Time) {
	key := op + ":" + errClassOf(err)
	e := c[key]
	if e == nil {
		e = &errClass{first: err.Error(), burstStart: now}
		c[key] = e
	}
	e.n++
	if now.Sub(e.last) > burstGap {
		e.burstStart = now
	}
	e.last = now
	e.longest = max(e.longest, now.Sub(e.burstStart))
}

// errClassOf is err's class (see errCounts).
func errClassOf(err error) string {
	prefix := ""
	if _, ok := errors.AsType[*kgo.ErrGroupSession](err); ok {
		prefix = "group session: "
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		return prefix + ke.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return prefix + "timeout"
	}
	inner := err
	for u := errors.Unwrap(inner); u != nil; u = errors.Unwrap(inner) {
		inner = u
	}
	class := inner.Error()
	if len(class) > 80 {
		class = class[:80] + "..."
	}
	return prefix + class
}

// sorted is the counts as sorted "op:class=count" strings, each with its
// longest burst when that lasted a second or more.
func (c errCounts) sorted() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		s := fmt.Sprintf("%s=%d", k, c[k].n)
		if d := c[k].longest; d >= time.Second {
			s += fmt.Sprintf(" (for %v on end)", d.Round(time.Millisecond))
		}
		out = append(out, s)
	}
	return out
}

// firsts is the first error of each class, whole, one per line.
func (c errCounts) firsts() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(c)) {
		fmt.Fprintf(&b, "\n  %s: %s", k, c[k].first)
	}
	return b.String()
}

// longestBurst is the longest burst of errors of any class of op whose
// class starts with prefix, and that class.
func (c errCounts) longestBurst(op, prefix string) (time.Duration, string) {
	var d time.Duration
	var class string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		if strings.HasPrefix(k, op+":"+prefix) && c[k].longest > d {
			d, class = c[k].longest, k
		}
	}
	return d, class
}
