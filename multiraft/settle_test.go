package multiraft

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// slowFSM is a countFSM that takes a while over each entry.
type slowFSM struct {
	countFSM
	delay time.Duration
}

func (f *slowFSM) Apply(l *raft.Log) any {
	time.Sleep(f.delay)
	return f.countFSM.Apply(l)
}

// A member whose FSM lags behind raft (raft counts an entry applied once
// it is queued for the FSM) becomes leader; Settle returns only once its
// FSM holds every entry its predecessor committed.
func TestSettleWaitsForTheFSM(t *testing.T) {
	n := newTestNet(t, nil)
	members := []int32{1, 2, 3}
	for _, id := range members {
		n.start(id)
	}
	g1, _ := n.open(1, "g", members, fastTiming(), false)
	slow := &slowFSM{delay: 10 * time.Millisecond}
	g2, err := n.host(2).Open(GroupSpec{Name: "g", Members: members, Dir: filepath.Join(n.base, "2", "g"),
		Timing: fastTiming(), FSM: slow, LogStore: n.store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g2.Close() })
	g3, _ := n.open(3, "g", members, fastTiming(), false)
	gs := []*Group{g1, g2, g3}
	if leaderOf(t, gs) == 1 {
		if err := g2.TransferLeadership(testCtx(t), 1); err != nil {
			t.Fatal(err)
		}
	}
	const values = 100
	for v := uint64(1); v <= values; v++ {
		propose(t, gs, v)
	}
	waitFor(t, "a leader other than node 2", func() bool { return !g2.IsLeader() && leaderOf(t, gs) != 1 })
	if err := gs[leaderOf(t, gs)].TransferLeadership(testCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node 2 to lead", g2.IsLeader)
	if err := g2.Settle(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if st, _ := slow.state(); st.high != values {
		t.Fatalf("Settle returned with the FSM at value %d of %d", st.high, values)
	}
}
