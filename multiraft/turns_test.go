package multiraft

import (
	"fmt"
	"testing"
)

// With one campaign turn per node, taken, no group elects and raft's
// rounds are refused (the gate is in raft's path); once it is free, the
// groups still each elect a leader, one round at a time.
func TestElectionTurnsLetEveryGroupElect(t *testing.T) {
	net := newTestNet(t, func(tun *Tuning) {
		tun.ElectionTurns = 1
		tun.RebalanceInterval = -1
	})
	for id := int32(1); id <= 3; id++ {
		net.start(id).turns <- struct{}{} // the one turn is taken until the groups time out
	}
	net.watchAll()
	groups := make([][]*Group, 16)
	for i := range groups {
		for id := int32(1); id <= 3; id++ {
			g, _ := net.open(id, fmt.Sprintf("g%d", i), []int32{1, 2, 3}, fastTiming(), false)
			groups[i] = append(groups[i], g)
		}
	}
	waitFor(t, "election rounds refused for want of a turn", func() bool {
		for id := int32(1); id <= 3; id++ {
			if net.host(id).Stats().TurnsRefused == 0 {
				return false
			}
		}
		return true
	})
	for _, gs := range groups {
		if gs[0].IsLeader() || gs[1].IsLeader() || gs[2].IsLeader() {
			t.Fatal("a group elected a leader while no node had a turn free")
		}
	}
	for id := int32(1); id <= 3; id++ {
		<-net.host(id).turns
	}
	for _, gs := range groups {
		leaderOf(t, gs)
	}
}
