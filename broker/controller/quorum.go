package controller

import "github.com/minikafka/minikafka-go/multiraft"

// Quorum is the metadata group as its leader sees it, for DescribeQuorum.
type Quorum struct {
	Leader            int32
	Term              uint64
	Commit, LastIndex uint64 // the leader's commit index and last entry
	Voters, NonVoters []int32
	Followers         []multiraft.FollowerProgress // every member but the leader
}

// Quorum describes the metadata group; ok is false on a node that does
// not lead it (only the leader knows its followers' progress).
func (c *Controller) Quorum() (q Quorum, ok bool) {
	rep := c.group.Replication()
	if !rep.Leader {
		return Quorum{}, false
	}
	voters, nonVoters, err := c.group.Configuration()
	if err != nil {
		return Quorum{}, false
	}
	return Quorum{Leader: c.cfg.NodeID, Term: c.group.Epoch(), Commit: rep.CommitIndex, LastIndex: rep.LastIndex,
		Voters: voters, NonVoters: nonVoters, Followers: rep.Followers}, true
}
