package multiraft

import (
	"fmt"
	"testing"
)

// Several groups on three hosts elect, replicate and agree, over one
// session per pair of hosts and direction.
func TestGroupsReplicateOverSharedSessions(t *testing.T) {
	n := newTestNet(t, nil)
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
		if st.SessionsDialed != 2 {
			t.Errorf("node %d dialed %d sessions, want 2 (one per peer)", id, st.SessionsDialed)
		}
	}
}
