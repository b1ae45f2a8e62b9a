package broker

import (
	"testing"

	"github.com/hashicorp/raft"
)

// Every node ranks the survivors of a group the same way: by the group's
// member order, skipping the lost node, so that each group has one first
// successor.
func TestSuccessorRank(t *testing.T) {
	ids := func(s ...string) []raft.ServerID {
		out := make([]raft.ServerID, len(s))
		for i, v := range s {
			out[i] = raft.ServerID(v)
		}
		return out
	}
	for _, tc := range []struct {
		members    []raft.ServerID
		lost, self raft.ServerID
		rank       int
		ok         bool
	}{
		{ids("2", "3", "1"), "2", "3", 0, true},
		{ids("2", "3", "1"), "2", "1", 1, true},
		{ids("3", "2", "1"), "2", "3", 0, true},
		{ids("3", "2", "1"), "2", "1", 1, true},
		{ids("1", "3", "2"), "2", "1", 0, true},
		{ids("1", "3", "2"), "2", "3", 1, true},
		{ids("1", "3"), "2", "1", 0, false}, // the lost node is not a member
		{ids("2", "3"), "2", "1", 0, false}, // this node is not a member
		{ids("1", "2", "3", "4", "5"), "3", "5", 3, true},
	} {
		rank, ok := successorRank(tc.members, tc.lost, tc.self)
		if rank != tc.rank || ok != tc.ok {
			t.Errorf("successorRank(%v, lost %s, self %s) = %d, %v; want %d, %v", tc.members, tc.lost, tc.self, rank, ok, tc.rank, tc.ok)
		}
	}
}
