package multiraft

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"golang.org/x/sync/errgroup"
)

// Successors. When a watched peer is lost (watch.go), each group that the
// lost node led and that has a member here gets a new leader at once,
// instead of after raft's heartbeat timeout: the group's successor starts
// an election (transport.startElection), which the other voters grant
// although they still know the lost leader.
//
// The successor is the first member in the group's order (Group.Members)
// other than the lost node; every node ranks the same way, so one
// candidate per group campaigns and votes do not split. The next member in
// line campaigns Tuning.SuccessorStagger later if its member still follows
// the lost node and the group's term has not moved (the first successor
// was lost too, or never got its vote request out). Raft's own timeouts
// cover the rest: a first successor whose log was behind, and what the
// watch cannot see.

// successor is one group this node should campaign in once due, if its
// member here still follows the lost node then (see campaignIfLeaderless).
type successor struct {
	g    *Group
	lost raft.ServerID
	rank int    // 0: the first successor
	term uint64 // the group's term when the loss was seen
	due  time.Time
}

// failoverLoop starts the successor campaigns of lost peers' groups. It is
// owned by the Host.
func (h *Host) failoverLoop() {
	defer h.wg.Done()
	var pending []successor
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case node := <-h.losses:
			pending = append(pending, h.successors(node, time.Now())...)
		case <-timer.C:
		}
		now := time.Now()
		var due []successor
		pending = slices.DeleteFunc(pending, func(s successor) bool {
			if s.due.After(now) {
				return false
			}
			due = append(due, s)
			return true
		})
		started := h.campaignAll(due)
		if started > 0 {
			h.log.Info("started elections for groups of a lost node", "count", started, "took", time.Since(now).Round(time.Millisecond))
		}
		if len(pending) > 0 {
			next := slices.MinFunc(pending, func(a, b successor) int { return a.due.Compare(b.due) }).due
			timer.Reset(time.Until(next))
		}
	}
}

// successorParallelism is how many successor campaigns are handed to
// their groups at once. Each waits for its group's raft to take the
// TimeoutNow, milliseconds on a busy node: one at a time, a node that lost
// the leader of 3,333 groups started 62 elections in the 1.3 s before the
// others' own election timeouts fired, and pre-votes from both survivors
// then split their votes for minutes.
const successorParallelism = 256

// campaignAll runs campaignIfLeaderless for each of due, several at once,
// and returns how many elections it started.
func (h *Host) campaignAll(due []successor) int {
	var started atomic.Int64
	var eg errgroup.Group
	eg.SetLimit(successorParallelism)
	for _, s := range due {
		eg.Go(func() error {
			if h.campaignIfLeaderless(s) {
				started.Add(1)
			}
			return nil
		})
	}
	_ = eg.Wait()
	return int(started.Load())
}

// successorRank is self's place among members (in order) other than lost;
// ok is false unless both lost and self are members.
func successorRank(members []int32, lost, self int32) (rank int, ok bool) {
	if !slices.Contains(members, lost) {
		return 0, false
	}
	for _, m := range members {
		switch m {
		case self:
			return rank, true
		case lost:
		default:
			rank++
		}
	}
	return 0, false
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
		if rank, ok := successorRank(t.g.Members(), lost, h.id); ok {
			out = append(out, successor{g: t.g, lost: ServerID(lost), rank: rank, term: r.CurrentTerm(),
				due: now.Add(time.Duration(rank) * h.tun.SuccessorStagger)})
		}
	}
	h.log.Info("lost a node; the groups shared with it get successors", "peer", lost, "groups", len(out))
	return out
}

// campaignIfLeaderless starts s's election if the group's member here
// still follows the lost node, and, for a later successor, the group's
// term has not moved since the loss (else an earlier successor
// campaigned: raft finishes that election, and another candidate now
// would only depose the winner before its followers hear of it). A member
// that knows no leader is left alone too: its own election timeout has
// fired, and raft's election is under way. It reports whether it started
// one.
func (h *Host) campaignIfLeaderless(s successor) bool {
	r := s.g.raft
	switch r.State() {
	case raft.Leader, raft.Shutdown:
		return false
	}
	if _, leader := r.LeaderWithID(); leader != s.lost {
		return false
	}
	if s.rank > 0 && r.CurrentTerm() != s.term {
		return false
	}
	ctx, cancel := context.WithTimeout(h.ctx, h.tun.StartElectionTimeout)
	defer cancel()
	if err := s.g.trans.startElection(ctx); err != nil {
		s.g.log.Debug("could not start an election", "err", err)
		return false
	}
	return true
}
