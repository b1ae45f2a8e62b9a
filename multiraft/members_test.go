package multiraft

import (
	"path/filepath"
	"slices"
	"testing"
)

// A group of 1, 2, 3 moves to 2, 3, 4: node 4 joins without bootstrapping,
// catches up as a non-voter (Progress shows it), is promoted, and node 1 is
// removed; node 4 then holds every value and the group still commits with
// node 1 stopped.
func TestMoveMembership(t *testing.T) {
	n := newTestNet(t, func(tun *Tuning) { tun.CatchUpRate = 64 << 10 })
	for id := int32(1); id <= 4; id++ {
		n.start(id)
	}
	members := []int32{1, 2, 3}
	var gs []*Group
	for _, id := range members {
		g, _ := n.open(id, "g", members, fastTiming(), false)
		gs = append(gs, g)
	}
	for v := uint64(1); v <= 50; v++ {
		propose(t, gs, v)
	}
	f4 := &countFSM{}
	g4, err := n.host(4).Open(GroupSpec{Name: "g", Members: []int32{2, 3, 4}, Join: true,
		Dir: filepath.Join(n.base, "4", "g"), Timing: fastTiming(), FSM: f4, LogStore: n.store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g4.Close() })
	if g4.Configured() {
		t.Fatal("a joining member bootstrapped the group")
	}
	leader := gs[leaderOf(t, gs)]
	if _, ok := leader.Progress(4); ok {
		t.Fatal("progress of a node that is not in the group")
	}
	addr4, _ := n.resolve(4)
	leader.Throttle(4, true)
	paced := leader.h.Stats().CatchUpBytesPaced
	if err := leader.AddNonvoter(testCtx(t), 4, addr4); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node 4 to catch up", func() bool {
		m, ok := leader.Progress(4)
		return ok && m >= leader.LastIndex()
	})
	if got := leader.h.Stats().CatchUpBytesPaced; got <= paced {
		t.Fatalf("node 4 caught up without pacing: %d bytes paced before, %d after", paced, got)
	}
	leader.Throttle(4, false)
	if err := leader.AddVoter(testCtx(t), 4, addr4); err != nil {
		t.Fatal(err)
	}
	if leader == gs[0] {
		// Node 1 leaves: let another member lead first.
		if err := leader.TransferLeadership(testCtx(t), 2); err != nil {
			t.Fatal(err)
		}
		leader = gs[1+leaderOf(t, gs[1:])]
	}
	if err := leader.RemoveServer(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	voters, nonvoters, err := leader.Configuration()
	if err != nil || !slices.Equal(slices.Sorted(slices.Values(voters)), []int32{2, 3, 4}) || len(nonvoters) != 0 {
		t.Fatalf("configuration: voters %v non-voters %v err %v", voters, nonvoters, err)
	}
	n.stop(1)
	rest := []*Group{gs[1], gs[2], g4}
	for v := uint64(51); v <= 60; v++ {
		propose(t, rest, v)
	}
	waitFor(t, "node 4 to apply every value", func() bool {
		st, gaps := f4.state()
		return st.high == 60 && gaps == 0
	})
	g4.SetMembers([]int32{4, 2, 3})
	if got := g4.Members(); !slices.Equal(got, []int32{4, 2, 3}) {
		t.Fatalf("Members after SetMembers = %v", got)
	}
}
