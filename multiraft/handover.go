package multiraft

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"
	"golang.org/x/sync/errgroup"
)

// openGroups returns the groups open and running on h.
func (h *Host) openGroups() []*Group {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Group, 0, len(h.groups))
	for _, t := range h.groups {
		if t.raft.Load() != nil {
			out = append(out, t.g)
		}
	}
	return out
}

// HandOver hands every leadership this node holds to another member, all
// at once, bounded by ctx: each to the first other member in the group's
// order whose node is up and that takes it (handOver), and to none when no
// such member does (raft's own pick could be a node that is down, and the
// group would then wait out its election timeout for nothing). It returns
// once this node knows each group's new leader (awaitSuccessor). A node
// stopping gracefully calls it first.
//
// From then on the node refuses leaderships offered to it: another
// node's rebalancing could otherwise hand a group back to it just before
// it closes, leaving the group to wait out an election.
func (h *Host) HandOver(ctx context.Context) {
	h.draining.Store(true)
	var eg errgroup.Group
	for _, g := range h.openGroups() {
		if g.IsLeader() {
			eg.Go(func() error { h.handOver(ctx, g); return nil })
		}
	}
	_ = eg.Wait()
}

// handOver offers g's leadership to its other members whose node is up
// (PeerUp), in the group's order, until one takes it or this member no
// longer leads, and then waits for the group's new leader (awaitSuccessor).
// A node that just died looks up until its session's end is read, a hung
// one until the session's keepalive fails: the transfer to it fails, and
// without an offer to the next member the group stayed with this stopping
// node, left to raft's election timeout (or, its quorum gone with this
// node, to no leader at all).
func (h *Host) handOver(ctx context.Context, g *Group) {
	for _, m := range g.Members() {
		if m == h.id {
			continue
		}
		if _, up := h.nodeUp(m); !up {
			continue
		}
		err := transferLeadership(ctx, g, m)
		if err == nil || !g.IsLeader() {
			h.awaitSuccessor(ctx, g, m)
			return
		}
		if ctx.Err() != nil {
			return
		}
		g.log.Debug("hand-over failed; offering the next member", "to", m, "err", err)
	}
}

// awaitSuccessor waits until g's member here knows a leader other than
// this node. raft counts a transfer done as soon as this leader steps
// down, and it steps down on the candidate's answer to an append, in the
// candidate's newer term, which may come before the candidate's vote
// request: a node that closed its groups then refused that vote, and in a
// group with another member down the candidate could not be elected. The
// wait ends early when to's node is no longer up, and lasts an election
// timeout at most (raft's own bound on a transfer), within ctx.
func (h *Host) awaitSuccessor(ctx context.Context, g *Group, to int32) {
	deadline := time.Now().Add(g.spec.Timing.ElectionTimeout)
	for {
		if l, _, ok := g.Leader(); ok && l != h.id {
			return
		}
		if _, up := h.nodeUp(to); !up || g.raft.State() == raft.Shutdown || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(handOverPoll):
		}
	}
}

// handOverPoll is how often a hand-over looks again: for raft to finish an
// earlier transfer of the same group, or for the group's new leader.
const handOverPoll = 10 * time.Millisecond

// transferLeadership is g.TransferLeadership, asked again while raft is
// still busy with an earlier transfer of g: raft answers a failed transfer
// before it clears its flag, so the offer to the next member may come
// first.
func transferLeadership(ctx context.Context, g *Group, to int32) error {
	for {
		err := g.TransferLeadership(ctx, to)
		if !errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(handOverPoll):
		}
	}
}

// rebalanceLoop hands leadership back to each group's preferred member
// (the first of GroupSpec.Members) when its node is up, so that leaders
// stay spread as placement intended. It is owned by the Host.
func (h *Host) rebalanceLoop() {
	defer h.wg.Done()
	// The first pass comes soon after start so that new groups spread
	// their leaders quickly.
	timer := time.NewTimer(h.tun.RebalanceFirst)
	defer timer.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-timer.C:
		}
		h.rebalance()
		timer.Reset(h.tun.RebalanceInterval)
	}
}

func (h *Host) rebalance() {
	var eg errgroup.Group
	eg.SetLimit(h.tun.TransferParallelism)
	for _, g := range h.openGroups() {
		if len(g.spec.Members) == 0 || g.spec.Members[0] == h.id || !g.IsLeader() {
			continue
		}
		pref := g.spec.Members[0]
		// Gossip lists a node for seconds after its process ends; a
		// transfer to it would block the group's writes until raft's
		// election timeout.
		if _, up := h.nodeUp(pref); !up {
			continue
		}
		eg.Go(func() error {
			if h.ctx.Err() != nil {
				return nil
			}
			if err := g.TransferLeadership(h.ctx, pref); err != nil {
				g.log.Debug("leadership transfer to the preferred member failed", "to", pref, "err", err)
			}
			return nil
		})
	}
	_ = eg.Wait()
}
