package multiraft

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A batch of new groups released together is led by each group's
// preferred member, without an election storm; the same groups hand their
// leaderships over when a node stops, and get them back by rebalancing.
func TestCampaignsHandOverAndRebalance(t *testing.T) {
	n := newTestNet(t, func(tu *Tuning) { tu.RebalanceInterval, tu.RebalanceFirst = 100*time.Millisecond, 100*time.Millisecond })
	n.startWatched()
	const groups = 12
	timing := slowTiming() // no election here is raft's own
	batches := map[int32][]*Group{}
	all := make([][]*Group, groups)
	for i := range groups {
		members := []int32{int32(i%3 + 1), int32((i+1)%3 + 1), int32((i+2)%3 + 1)}
		for id := int32(1); id <= 3; id++ {
			g, _ := n.open(id, fmt.Sprintf("c%d", i), members, timing, true)
			batches[id] = append(batches[id], g)
			all[i] = append(all[i], g)
		}
	}
	for id := int32(1); id <= 3; id++ {
		if got := n.host(id).ReleaseCampaigns(testCtx(t), batches[id]); got != groups/3 {
			t.Fatalf("node %d released %d preferred members, want %d", id, got, groups/3)
		}
	}
	for i := range groups {
		pref := i % 3
		waitFor(t, fmt.Sprintf("group %d led by its preferred member", i), func() bool { return all[i][pref].IsLeader() })
	}

	// Node 1 hands its leaderships over before it stops.
	n.host(1).HandOver(testCtx(t))
	for i := 0; i < groups; i += 3 {
		if all[i][0].IsLeader() {
			t.Fatalf("group %d still led by node 1 after HandOver", i)
		}
		waitFor(t, fmt.Sprintf("group %d to have a new leader", i), func() bool { return all[i][1].IsLeader() || all[i][2].IsLeader() })
	}
	// From then on node 1, which is stopping, takes no leadership back:
	// a transfer to it (what its peers' rebalancing, every 100ms here,
	// would do for the groups that prefer it) fails and leaves the leader.
	for i := 0; i < groups; i += 3 {
		l := all[i][1]
		if !l.IsLeader() {
			l = all[i][2]
		}
		if err := l.TransferLeadership(testCtx(t), 1); err == nil {
			t.Fatalf("group %d: a transfer to the stopping node 1 succeeded", i)
		}
		if !l.IsLeader() || all[i][0].IsLeader() {
			t.Fatalf("group %d: leadership moved after a refused transfer", i)
		}
	}
}

// A new group's hold outlasts CampaignHold heartbeat timeouts while its
// preferred member will still campaign, up to CampaignHoldMax: raft's own
// timer must not end it sooner (it was set to CampaignHold heartbeat
// timeouts, so 10,000 new partitions whose opening took over a minute
// started campaigning on their own, and their elections stormed).
func TestHoldLastsWhilePreferredWillCampaign(t *testing.T) {
	const holdMax = 3 * time.Second
	n := newTestNet(t, func(tu *Tuning) { tu.CampaignHold, tu.CampaignHoldMax = 2, holdMax })
	n.startWatched()
	timing := fastTiming() // hold bound: 2 x 200ms
	var gs []*Group
	for id := int32(2); id <= 3; id++ { // node 1, preferred and up, never releases its member
		g, _ := n.open(id, "held", []int32{1, 2, 3}, timing, true)
		gs = append(gs, g)
	}
	g1, _ := n.open(1, "held", []int32{1, 2, 3}, timing, true)
	opened := time.Now()
	for time.Since(opened) < holdMax/2 {
		for _, g := range gs {
			if st := g.raft.State(); st != raft.Follower {
				t.Fatalf("a held member became %v after %v; the hold lasts up to %v", st, time.Since(opened).Round(time.Millisecond), holdMax)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Then node 1's member's hold ends too, and any member may win.
	waitFor(t, "a leader once the hold's maximum passed", func() bool { return g1.IsLeader() || gs[0].IsLeader() || gs[1].IsLeader() })
}
