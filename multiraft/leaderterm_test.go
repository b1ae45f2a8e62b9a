package multiraft

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A vote request of a leadership transfer moves a follower's term on while
// raft keeps the old leader: LeaderEpoch must not name that leader with the
// new term. The old leader is stopped at once, so it never leads the new
// term; the follower names the group's next leader once it has heard from
// it.
func TestLeaderEpochAfterTransferVote(t *testing.T) {
	n := newTestNet(t, nil)
	members := []int32{1, 2, 3}
	var gs []*Group
	for _, id := range members {
		n.start(id)
		g, _ := n.open(id, "g", members, fastTiming(), false)
		gs = append(gs, g)
	}
	l := leaderOf(t, gs)
	propose(t, gs, 1)
	term := gs[l].Epoch()
	f := gs[(l+1)%3]          // the follower asked to vote
	other := gs[(l+2)%3].h.id // the candidate it is asked for
	waitFor(t, "the follower to know the leader", func() bool {
		node, e, ok := f.LeaderEpoch()
		return ok && node == gs[l].h.id && e == term
	})
	resp := make(chan raft.RPCResponse, 1)
	f.trans.consumer <- raft.RPC{RespChan: resp, Command: &raft.RequestVoteRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(ServerID(other)), Addr: []byte("x")},
		Term:      term + 1, LastLogIndex: 1 << 40, LastLogTerm: term, LeadershipTransfer: true,
	}}
	select {
	case <-resp:
	case <-time.After(5 * time.Second):
		t.Fatal("no answer to the vote request")
	}
	if f.Epoch() <= term {
		t.Fatalf("the follower's term stayed %d", f.Epoch())
	}
	node, e, ok := f.LeaderEpoch()
	n.stop(gs[l].h.id)
	if ok && e == term+1 && node == gs[l].h.id {
		t.Fatalf("named node %d, the old leader, the leader of term %d", node, e)
	}
	rest := []*Group{gs[(l+1)%3], gs[(l+2)%3]}
	waitFor(t, "a new leader, named by both members left", func() bool {
		i := leaderOf(t, rest)
		want, e := rest[i].h.id, rest[i].Epoch()
		for _, g := range rest {
			if node, got, ok := g.LeaderEpoch(); !ok || node != want || got != e {
				return false
			}
		}
		return true
	})
}
