package multiraft

import "github.com/hashicorp/raft"

// Campaign turns. When thousands of this node's members time out together
// (a large loss, a stalled process), their elections' vote requests queue
// at the same peers past raft's election timeout, every candidate starts
// over in a newer term, and no group elects a leader again: ten minutes
// after a kill -9 at 10,000 partitions, 9,883 of a survivor's members
// were still candidates. So raft (as patched in third_party/raft,
// campaign_gate.go) asks for a turn before each election round it starts
// on its own timeout; at most Tuning.ElectionTurns run at once, and a
// member without one waits as a follower for another randomized timeout.
// Campaigns this Host starts itself (successors, a new group's preferred
// member, rebalancing) are leadership transfers to raft and take no turn:
// they have their own limits. The metadata group (managed membership)
// takes none either: every other group reports its leader to it.

// CampaignTurn implements raft.WithCampaignGate.
func (t *transport) CampaignTurn() (func(), bool) {
	if t.g.managedMembership() {
		return nil, true
	}
	select {
	case t.h.turns <- struct{}{}:
		return func() { <-t.h.turns }, true
	default:
		t.h.stats.turnsRefused.Add(1)
		return nil, false
	}
}

var _ raft.WithCampaignGate = (*transport)(nil)
