package multiraft

import (
	"fmt"
	"testing"
)

// With one campaign turn per node, groups that all time out together
// still each elect a leader, and the rounds that found the turn taken
// waited for it (the gate is in raft's path).
func TestElectionTurnsLetEveryGroupElect(t *testing.T) {
	net := newTestNet(t, func(tun *Tuning) {
		tun.ElectionTurns = 1
		tun.RebalanceInterval = -1
	})
	for id := int32(1); id <= 3; id++ {
		net.start(id)
	}
	net.watchAll()
	groups := make([][]*Group, 16)
	for i := range groups {
		for id := int32(1); id <= 3; id++ {
			g, _ := net.open(id, fmt.Sprintf("g%d", i), []int32{1, 2, 3}, fastTiming(), false)
			groups[i] = append(groups[i], g)
		}
	}
	for _, gs := range groups {
		leaderOf(t, gs)
	}
	var refused uint64
	for id := int32(1); id <= 3; id++ {
		refused += net.host(id).Stats().TurnsRefused
	}
	if refused == 0 {
		t.Fatal("no election round waited for a turn: 48 members timed out with one turn per node")
	}
}
