package membership

import (
	"testing"
	"time"
)

// A node that failed and comes back at its address without joining anyone
// is found again by the node that saw it fail: the reconnect loop joins
// it. Without the loop nobody would dial it (memberlist only gossips with
// live members), as after a healed network partition.
//
// The join runs the newcomer's NotifyMerge, on memberlist's goroutine,
// which reads the local address New writes. While it happens this
// goroutine only sleeps, so nothing orders New's write before that read:
// -race reports an unguarded write every run, not only when the join beats
// a first poll.
func TestFailedMemberIsReconnected(t *testing.T) {
	cfg1 := fastConfig(1)
	cfg1.ReconnectInterval = 100 * time.Millisecond
	a := start(t, cfg1)
	b, err := New(fastConfig(2))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.Join(ctxFor(t, 10*time.Second), []string{a.LocalAddr()}); err != nil || n != 1 {
		t.Fatalf("Join = %d, %v", n, err)
	}
	sees(t, a, 5*time.Second, wantMembers(1, 2))
	addr := b.LocalAddr()
	if err := b.Shutdown(); err != nil {
		t.Fatal(err)
	}
	sees(t, a, 10*time.Second, wantMembers(1))

	cfg2 := fastConfig(2)
	cfg2.BindAddr = addr // back at the same address; it joins nobody
	b2 := start(t, cfg2)
	time.Sleep(3 * cfg1.ReconnectInterval) // a's reconnect loop joins b2
	sees(t, a, 10*time.Second, wantMembers(1, 2))
	sees(t, b2, 10*time.Second, wantMembers(1, 2))
}
