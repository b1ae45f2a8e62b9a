package multiraft

import (
	"cmp"
	"context"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// Successors. When a watched peer is lost (watch.go), each group that the
// lost node led and that has a member here gets a new leader at once,
// instead of after raft's heartbeat timeout: the group's successor starts
// an election (transport.startElection), which the other voters grant
// although they still know the lost leader.
//
// The successor is the first in the group's line of succession
// (SuccessorOrder: its other members in an order hashed from the group's
// name, so that the survivors share the elections); every node ranks the
// same way, so one candidate per group campaigns and votes do not split. The next member in
// line campaigns Tuning.SuccessorStagger later if its member still follows
// the lost node and the group's term has not moved (the first successor
// was lost too, or never got its vote request out). Raft's own timeouts
// cover the rest: a first successor whose log was behind, and what the
// watch cannot see. How many elections run at once, and how the other
// members of a large loss are held back meanwhile: losshold.go.

// successor is one group this node should campaign in once due, if its
// member here still follows the lost node then (see needed).
type successor struct {
	g        *Group
	lost     raft.ServerID
	lostNode int32  // lost, as a node id
	rank     int    // 0: the first successor
	term     uint64 // the group's term when the loss was seen
	due      time.Time
}

// failoverLoop starts the successor campaigns of lost peers' groups (at
// most Tuning.SuccessorsInFlight elections at a time, losshold.go) and
// holds back the other members of a large loss. It is owned by the Host.
func (h *Host) failoverLoop() {
	defer h.wg.Done()
	f := &failover{h: h, held: map[*Group]heldMember{}}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case node := <-h.losses:
			f.lose(node, time.Now())
		case <-timer.C:
		}
		timer.Reset(f.step(time.Now()))
		f.markBusy()
	}
}

// SuccessorOrder is the line of succession of the group named name
// after lost: its other members, ordered by a hash of the group's name and
// the member, which every node computes alike. The first one's member
// campaigns at once when lost's node is found lost. An order that follows the
// members' (a partition's replica list) gave one survivor every election:
// with the usual placement, the replica after a given leader is always the
// same node.
func SuccessorOrder(name string, members []int32, lost int32) []int32 {
	if !slices.Contains(members, lost) {
		return nil
	}
	order := slices.DeleteFunc(slices.Clone(members), func(m int32) bool { return m == lost })
	key := func(m int32) uint64 {
		h := fnv.New64a()
		h.Write([]byte(name))
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(m)))
		return h.Sum64()
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(key(a), key(b)) })
	return order
}

// successorRank is self's place in SuccessorOrder; ok is false unless both
// lost and self are members.
func successorRank(name string, members []int32, lost, self int32) (rank int, ok bool) {
	rank = slices.Index(SuccessorOrder(name, members, lost), self)
	return max(rank, 0), rank >= 0
}

// successors lists the groups this node shares with the lost node and
// that the lost node leads, as this node's member sees it, each due when
// this node's turn as successor comes.
func (h *Host) successors(lost int32, now time.Time) []successor {
	h.mu.Lock()
	ts := make([]*transport, 0, len(h.groups))
	for _, t := range h.groups {
		ts = append(ts, t)
	}
	h.mu.Unlock()
	var out []successor
	for _, t := range ts {
		r := t.raft.Load()
		if r == nil {
			continue // still opening: it has no leader to lose
		}
		if _, leader := r.LeaderWithID(); leader != ServerID(lost) {
			continue // led by another, or without a known leader: raft is on it
		}
		if rank, ok := successorRank(t.g.Name(), t.g.Members(), lost, h.id); ok {
			out = append(out, successor{g: t.g, lost: ServerID(lost), lostNode: lost, rank: rank, term: r.CurrentTerm(),
				due: now.Add(time.Duration(rank) * h.tun.SuccessorStagger)})
		}
	}
	h.log.Info("lost a node; the groups shared with it get successors", "peer", lost, "groups", len(out))
	return out
}

// needed reports whether s's election should still start: the group's
// member here still follows the lost node and, for a later successor, the
// group's term has not moved since the loss (else an earlier successor
// campaigned: raft finishes that election, and another candidate now
// would only depose the winner before its followers hear of it). A member
// that knows no leader is left alone too: its own election timeout has
// fired, and raft's election is under way.
func (s successor) needed() bool {
	r := s.g.raft
	switch r.State() {
	case raft.Leader, raft.Shutdown:
		return false
	}
	if _, leader := r.LeaderWithID(); leader != s.lost {
		return false
	}
	return s.rank == 0 || r.CurrentTerm() == s.term
}

// campaign starts s's election if it is still needed.
func (h *Host) campaign(s successor) {
	if !s.needed() {
		return
	}
	ctx, cancel := context.WithTimeout(h.ctx, h.tun.StartElectionTimeout)
	defer cancel()
	if err := s.g.trans.startElection(ctx); err != nil {
		s.g.log.Debug("could not start an election", "err", err)
	}
}

// watchTransferVote returns what to do once t's member has answered req,
// a vote request of a leadership transfer (a successor's election): if it
// refused the vote while following a node the watch finds down, and its
// log is ahead of the candidate's, it campaigns itself. The candidate
// cannot win without it in a group of three, and raft would wait for its
// heartbeat timeout: the refused election moved the term, so the second
// in line does not campaign either (needed). It returns nil when t's
// member follows no such node. Starting an election is always safe.
func (t *transport) watchTransferVote(req *raft.RequestVoteRequest) func(raft.RPCResponse) {
	r := t.raft.Load()
	if !req.LeadershipTransfer || r == nil {
		return nil
	}
	_, leader := r.LeaderWithID()
	node, ok := nodeOf(leader)
	if !ok || !t.h.nodeDown(node) {
		return nil
	}
	return func(answer raft.RPCResponse) {
		if resp, ok := answer.Response.(*raft.RequestVoteResponse); !ok || resp.Granted || !t.logAhead(req) {
			return
		}
		t.g.log.Info("refused the vote of a successor whose log is behind; campaigning instead",
			"candidate", string(req.ID), "lost_leader", node)
		t.h.goOwned(func() {
			ctx, cancel := context.WithTimeout(t.h.ctx, t.h.tun.StartElectionTimeout)
			defer cancel()
			if err := t.startElection(ctx); err != nil {
				t.g.log.Debug("could not start an election", "err", err)
			}
		})
	}
}

// logAhead reports whether t's member's log is more up to date than the
// candidate's of req, as raft compares them (last term, then last index).
func (t *transport) logAhead(req *raft.RequestVoteRequest) bool {
	idx := t.g.raft.LastIndex()
	var last raft.Log
	if err := t.g.logs.GetLog(idx, &last); err != nil {
		return false // only a snapshot: leave it to raft
	}
	return last.Term > req.LastLogTerm || (last.Term == req.LastLogTerm && idx > req.LastLogIndex)
}
