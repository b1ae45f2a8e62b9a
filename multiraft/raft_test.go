package multiraft

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// Several groups on three hosts elect, replicate and agree, over one
// session per pair of hosts and direction, with either log store.
func TestGroupsReplicateOverSharedSessions(t *testing.T) {
	for _, store := range allStores {
		t.Run(string(store), func(t *testing.T) { testGroupsReplicateOverSharedSessions(t, store) })
	}
}

func testGroupsReplicateOverSharedSessions(t *testing.T, store LogStore) {
	n := newTestNet(t, nil)
	n.store = store
	for id := int32(1); id <= 3; id++ {
		n.start(id)
	}
	const groups = 6
	var all [groups][]*Group
	var fsms [groups][]*countFSM
	for i := range groups {
		members := []int32{int32(i%3 + 1), int32((i+1)%3 + 1), int32((i+2)%3 + 1)}
		for id := int32(1); id <= 3; id++ {
			g, f := n.open(id, fmt.Sprintf("g%d", i), members, fastTiming(), false)
			all[i] = append(all[i], g)
			fsms[i] = append(fsms[i], f)
		}
	}
	for i := range groups {
		for v := uint64(1); v <= 50; v++ {
			propose(t, all[i], v)
		}
	}
	for i := range groups {
		waitFor(t, fmt.Sprintf("group %d to converge", i), func() bool {
			for _, f := range fsms[i] {
				if st, gaps := f.state(); st.high != 50 || gaps != 0 {
					return false
				}
			}
			return true
		})
	}
	for id := int32(1); id <= 3; id++ {
		st := n.host(id).Stats()
		if st.SessionsDialed > 2 || st.StreamsOpened > 64 {
			t.Errorf("node %d dialed %d sessions and opened %d streams, want at most one session per peer, streams reused",
				id, st.SessionsDialed, st.StreamsOpened)
		}
	}
}

// A member that was down while the others compacted their logs catches up
// from a snapshot sent over a call stream (its bytes follow the request),
// with either log store.
func TestSnapshotInstalledOverStream(t *testing.T) {
	for _, store := range allStores {
		t.Run(string(store), func(t *testing.T) { testSnapshotInstalledOverStream(t, store) })
	}
}

func testSnapshotInstalledOverStream(t *testing.T, store LogStore) {
	n := newTestNet(t, nil)
	n.store = store
	for id := int32(1); id <= 3; id++ {
		n.start(id)
	}
	timing := fastTiming()
	timing.SnapshotThreshold, timing.TrailingLogs = 8, 2
	members := []int32{1, 2, 3}
	var gs []*Group
	for id := int32(1); id <= 3; id++ {
		g, _ := n.open(id, "s", members, timing, false)
		gs = append(gs, g)
	}
	for v := uint64(1); v <= 5; v++ {
		propose(t, gs, v)
	}
	lag := (leaderOf(t, gs) + 1) % 3 // a follower
	gs[lag].Close()
	live := slices.Delete(slices.Clone(gs), lag, lag+1)
	for v := uint64(6); v <= 60; v++ {
		propose(t, live, v)
	}
	for _, g := range live {
		if err := g.Snapshot(); err != nil {
			t.Fatal(err)
		}
	}
	_, f2 := reopen(t, n, int32(lag+1), "s", members, timing)
	waitFor(t, "the lagging member to catch up", func() bool { st, _ := f2.state(); return st.high == 60 })
	if st, gaps := f2.state(); gaps != 0 || st.n != 60 || st.sum != 60*61/2 {
		t.Fatalf("restored state %+v, %d gaps", st, gaps)
	}
	if n.host(int32(lag+1)).Stats().CallsReceived == 0 {
		t.Fatal("no calls received")
	}
}

// reopen opens an existing group's member again, with a fresh FSM that
// must be restored from a snapshot.
func reopen(t *testing.T, n *testNet, id int32, name string, members []int32, timing Timing) (*Group, *countFSM) {
	t.Helper()
	f := &countFSM{}
	g, err := n.host(id).Open(GroupSpec{Name: name, Members: members, Dir: filepath.Join(n.base, fmt.Sprint(id), name),
		Timing: timing, FSM: f, LogStore: n.store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, f
}

// Settle returns once a new leader has applied its predecessors' entries,
// and refuses on a follower and on a closed group.
func TestSettle(t *testing.T) {
	n := newTestNet(t, nil)
	var gs []*Group
	var fsms []*countFSM
	for id := int32(1); id <= 3; id++ {
		n.start(id)
	}
	for id := int32(1); id <= 3; id++ {
		g, f := n.open(id, "s", []int32{1, 2, 3}, fastTiming(), false)
		gs, fsms = append(gs, g), append(fsms, f)
	}
	for v := uint64(1); v <= 20; v++ {
		propose(t, gs, v)
	}
	l := leaderOf(t, gs)
	if err := gs[l].Settle(testCtx(t)); err != nil {
		t.Fatalf("leader's Settle: %v", err)
	}
	if st, _ := fsms[l].state(); st.high != 20 {
		t.Fatalf("settled leader applied up to %d, want 20", st.high)
	}
	follower := (l + 1) % 3
	if err := gs[follower].Settle(testCtx(t)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("follower's Settle: %v, want ErrNotLeader", err)
	}

	gs[l].Close()
	if err := gs[l].Settle(context.Background()); err == nil {
		t.Fatal("Settle of a closed group succeeded")
	}
}
