package membership

import (
	"testing"
	"time"
)

// A node comes back at the address of one its peer saw crash, and the
// peer's reconnect loop joins it: the newcomer's NotifyMerge, on one of
// memberlist's goroutines, reads the local address New writes. While the
// peer joins, this goroutine only sleeps, so nothing it does orders New's
// write before that read: under -race an unguarded write is reported here
// every time, where TestFailedMemberIsReconnected catches it only when the
// join beats that test's first poll.
func TestMergeRightAfterNewIsSafe(t *testing.T) {
	cfg1 := fastConfig(1)
	cfg1.ReconnectInterval = 10 * time.Millisecond
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
	if err := b.Shutdown(); err != nil { // a crash: no leave message
		t.Fatal(err)
	}
	sees(t, a, 10*time.Second, wantMembers(1))

	cfg2 := fastConfig(2)
	cfg2.BindAddr = addr
	start(t, cfg2)
	time.Sleep(300 * time.Millisecond) // a's reconnect loop joins b2 meanwhile
	sees(t, a, 5*time.Second, wantMembers(1, 2))
}
