package multiraft

import (
	"fmt"
	"testing"
	"time"
)

// budgetNet starts node 1 with the pebble store and a 2 MiB memtable (a
// budget of 512 KiB, trims of at least 64 KiB), and opens groups that
// would never trim by their own bounds.
func budgetNet(t *testing.T, groups int) []*Group {
	n := newTestNet(t, nil)
	n.store, n.logMemTable = LogStorePebble, 2<<20
	n.start(1)
	timing := fastTiming()
	timing.SnapshotThreshold, timing.SnapshotInterval = 1<<20, time.Hour
	timing.SnapshotBytes, timing.TrailingBytes = 64<<20, 8<<20
	var gs []*Group
	for i := range groups {
		g, _ := n.open(1, fmt.Sprintf("b%d", i), []int32{1}, timing, false)
		leaderOf(t, []*Group{g})
		gs = append(gs, g)
	}
	return gs
}

// proposeEach proposes n entries of size bytes to each group, round robin.
func proposeEach(t *testing.T, gs []*Group, n, size int) {
	t.Helper()
	for range n {
		for _, g := range gs {
			if _, _, err := g.Propose(make([]byte, size), 5*time.Second).Wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func heldBy(gs []*Group) (total int64) {
	for _, g := range gs {
		total += g.logs.bytes()
	}
	return total
}

// Groups that share the node's log store hold about the budget together,
// a quarter of the memtable, though each alone stays far under its own
// bound: 4 MiB proposed to four groups, at most 512 KiB (plus what
// arrives while a snapshot is taken) kept.
func TestLogBudgetBoundsTheGroupsTogether(t *testing.T) {
	gs := budgetNet(t, 4)
	budget := gs[0].logs.budget
	proposeEach(t, gs, 256, 4<<10)
	slack := budget.minTrim
	waitFor(t, "the groups trimmed to the budget", func() bool { return heldBy(gs) <= budget.limit+slack })
	for _, g := range gs {
		if g.logs.bytes() == 0 {
			t.Errorf("group %s kept no entry", g.spec.Name)
		}
	}
	// A log counts a trim in the budget just after it forgets the
	// entries, so the two totals agree once the last trim is counted.
	waitFor(t, "the budget counts what the groups hold", func() bool { return gs[0].h.LogBudget().Held == heldBy(gs) })
	if got := gs[0].h.LogBudget(); got.Limit != 512<<10 || got.Trims == 0 {
		t.Errorf("LogBudget %+v, want a limit of 512 KiB and trims", got)
	}
}

// Many groups holding a little each are not snapshotted for a few bytes
// each: over the budget, none holding minTrim, none is trimmed; the one
// that grows past minTrim is.
func TestLogBudgetLeavesSmallGroups(t *testing.T) {
	gs := budgetNet(t, 20)
	budget := gs[0].logs.budget
	proposeEach(t, gs, 14, 4<<10) // 20 x 57 KiB: over 512 KiB, each under 64 KiB
	if heldBy(gs) <= budget.limit {
		t.Fatalf("the groups hold %d bytes, not over the budget %d", heldBy(gs), budget.limit)
	}
	firsts := func(g *Group) uint64 {
		first, err := g.store.FirstIndex()
		if err != nil {
			t.Fatal(err)
		}
		return first
	}
	time.Sleep(200 * time.Millisecond) // the budget's loop would have kicked by now
	for _, g := range gs {
		if first := firsts(g); first != 1 {
			t.Fatalf("group %s trimmed to %d though it holds %d bytes", g.spec.Name, first, g.logs.bytes())
		}
	}
	proposeEach(t, gs[:1], 16, 4<<10)
	waitFor(t, "the grown group trimmed", func() bool { return firsts(gs[0]) > 1 })
	for _, g := range gs[1:] {
		if first := firsts(g); first != 1 {
			t.Fatalf("group %s trimmed to %d", g.spec.Name, first)
		}
	}
}
