package e2e

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestErrCountsClasses: a class names the Kafka error or the innermost
// cause, not the wrapper's message, and keeps the first error whole.
func TestErrCountsClasses(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{kerr.UnknownTopicID, "commit:UNKNOWN_TOPIC_ID"},
		{&kgo.ErrGroupSession{Err: fmt.Errorf("heartbeat has been failing for 20 consecutive attempts: %w", dial)},
			"commit:group session: connection refused"},
		{&kgo.ErrGroupSession{Err: fmt.Errorf("failing: %w", kerr.NotCoordinator)}, "commit:group session: NOT_COORDINATOR"},
	} {
		c := errCounts{}
		c.note("commit", tc.err)
		if got := c.sorted(); len(got) != 1 || got[0] != tc.want+"=1" {
			t.Errorf("%v: classes %v, want %s=1", tc.err, got, tc.want)
		}
		if got := c.firsts(); got != "\n  "+tc.want+": "+tc.err.Error() {
			t.Errorf("firsts %q", got)
		}
	}
}

// TestErrCountsBursts: errors of a class less than burstGap apart make one
// burst; a longer pause starts another.
func TestErrCountsBursts(t *testing.T) {
	c := errCounts{}
	t0 := time.Unix(1000, 0)
	err := &kgo.ErrGroupSession{Err: kerr.NotCoordinator}
	for i := range 11 { // 0 .. 5 s, every 500 ms
		c.noteAt("fetch", err, t0.Add(time.Duration(i)*500*time.Millisecond))
	}
	for i := range 3 { // after a pause of 10 s: 2 s
		c.noteAt("fetch", err, t0.Add(15*time.Second+time.Duration(i)*time.Second))
	}
	c.noteAt("fetch", kerr.UnknownTopicID, t0.Add(time.Minute))
	d, class := c.longestBurst("fetch", "group session: ")
	if d != 5*time.Second || class != "fetch:group session: NOT_COORDINATOR" {
		t.Errorf("longest burst %v of %q, want 5s of group session: NOT_COORDINATOR", d, class)
	}
	if got := c.sorted(); got[1] != "fetch:group session: NOT_COORDINATOR=14 (for 5s on end)" {
		t.Errorf("sorted %v", got)
	}
}
