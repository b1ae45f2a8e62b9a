package multiraft

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"
)

// ReleaseCampaigns ends the campaign hold (GroupSpec.Hold) of a batch of
// groups this node just opened together (every partition of a new topic,
// say; nil entries are skipped). The preferred members here (first in
// Members) campaign at once, without raft's pre-vote round and whatever
// their heartbeat timeout (a new group has no leader to disrupt), at most
// Tuning.CampaignsInFlight at a time, each freeing its slot when its group
// has a leader or after Tuning.CampaignSlot. The other members stay held
// (they vote and follow but do not campaign) until HoldAfterLeader
// heartbeat timeouts after they first hear of a leader, or a settle time
// after the batch: SmallBatchSettle heartbeat timeouts for a small batch
// (it cannot storm, and a long hold would only slow its fail-over), Settle
// to twice Settle for a large one; a group whose preferred member is down
// elects one of them then. A hold whose time is up while the preferred
// member will still campaign (its node runs, or it is here and this
// release is still going) lasts on, up to Tuning.CampaignHoldMax, so that
// thousands of groups do not campaign together when their holds end.
//
// It returns once every preferred member has campaigned, or when ctx ends,
// with the number of preferred members.
func (h *Host) ReleaseCampaigns(ctx context.Context, batch []*Group) int {
	var preferred []*Group
	for _, g := range batch {
		if g == nil || !g.held() {
			continue
		}
		hb := g.spec.Timing.HeartbeatTimeout
		settle := time.Duration(h.tun.Settle) * hb
		switch {
		case g.spec.Members[0] == h.id:
			preferred = append(preferred, g)
		case len(batch) <= h.tun.SmallBatch:
			g.releaseCampaign(time.Duration(h.tun.SmallBatchSettle) * hb)
		default:
			g.releaseCampaign(settle + rand.N(settle))
		}
	}
	if len(preferred) > h.tun.CampaignsInFlight {
		h.electing.Add(1)
		h.beginMany()
		defer h.endMany()
		defer h.electing.Add(-1)
	}
	type campaign struct {
		g     *Group
		until time.Time
	}
	var inFlight []campaign
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for _, g := range preferred {
		for len(inFlight) >= h.tun.CampaignsInFlight {
			select {
			case <-ctx.Done():
				return len(preferred)
			case <-tick.C:
			}
			now := time.Now()
			inFlight = slices.DeleteFunc(inFlight, func(c campaign) bool {
				_, _, led := c.g.Leader()
				return led || now.After(c.until)
			})
		}
		sctx, cancel := context.WithTimeout(ctx, h.tun.StartElectionTimeout)
		if err := g.trans.startElection(sctx); err != nil {
			g.log.Debug("could not start the first election", "err", err)
		}
		cancel()
		g.releaseCampaign(0)
		inFlight = append(inFlight, campaign{g, time.Now().Add(h.tun.CampaignSlot)})
	}
	return len(preferred)
}
