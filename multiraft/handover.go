package multiraft

import (
	"context"
	"time"

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

// liveTarget returns the first of members, other than this node, whose
// node is up (PeerUp): a member that can take a leadership now.
func (h *Host) liveTarget(members []int32) (int32, bool) {
	for _, m := range members {
		if m == h.id {
			continue
		}
		if _, up := h.nodeUp(m); up {
			return m, true
		}
	}
	return 0, false
}

// HandOver hands every leadership this node holds to another member, all
// at once, bounded by ctx: to the
// first other member in the group's order whose node is up, and not at
// all when none is (raft's own pick could be a node that is down, and the
// group would then wait out its election timeout for nothing). A node
// stopping gracefully calls it first.
//
// From then on the node refuses leaderships offered to it: another
// node's rebalancing could otherwise hand a group back to it just before
// it closes, leaving the group to wait out an election.
func (h *Host) HandOver(ctx context.Context) {
	h.draining.Store(true)
	var eg errgroup.Group
	for _, g := range h.openGroups() {
		if !g.IsLeader() {
			continue
		}
		to, ok := h.liveTarget(g.Members())
		if !ok {
			continue
		}
		eg.Go(func() error {
			if err := g.TransferLeadership(ctx, to); err != nil {
				g.log.Debug("hand-over failed", "to", to, "err", err)
			}
			return nil
		})
	}
	_ = eg.Wait()
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
