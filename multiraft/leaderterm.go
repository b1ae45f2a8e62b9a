package multiraft

import "github.com/hashicorp/raft"

// leaderTerm is a leader and the term it leads in, as an AppendEntries
// from it showed.
type leaderTerm struct {
	node int32
	term uint64
}

// noteLeader records the sender of an AppendEntries as the leader of its
// term, unless a later term's leader was seen already.
func (t *transport) noteLeader(req *raft.AppendEntriesRequest) {
	node, ok := nodeOf(raft.ServerID(req.RPCHeader.ID))
	if !ok {
		return
	}
	for {
		cur := t.leaderSeen.Load()
		if cur != nil && cur.term >= req.Term {
			return
		}
		if t.leaderSeen.CompareAndSwap(cur, &leaderTerm{node: node, term: req.Term}) {
			return
		}
	}
}

// noteCommit records the commit index an AppendEntries carried, if it is
// the highest yet.
func (t *transport) noteCommit(req *raft.AppendEntriesRequest) {
	for {
		cur := t.leaderCommit.Load()
		if req.LeaderCommitIndex <= cur || t.leaderCommit.CompareAndSwap(cur, req.LeaderCommitIndex) {
			return
		}
	}
}

// LeaderEpoch returns the group's leader with the term it leads in, as a
// consistent pair: this member while it leads, else the sender of the
// latest AppendEntries if that was in this member's current term. raft
// keeps the old leader when a vote request of a leadership transfer moves
// the term on, so Leader and Epoch read apart could name the old leader
// with the new term. ok is false when no leader of the current term is
// known.
func (g *Group) LeaderEpoch() (node int32, epoch uint64, ok bool) {
	term := g.raft.CurrentTerm()
	if g.raft.State() == raft.Leader && g.raft.CurrentTerm() == term {
		return g.h.id, term, true
	}
	if seen := g.trans.leaderSeen.Load(); seen != nil && seen.term == term {
		return seen.node, term, true
	}
	return 0, term, false
}
