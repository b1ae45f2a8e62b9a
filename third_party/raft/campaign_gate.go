// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

// Campaign turns (a MiniKafka patch; see WithCampaignGate). A node that
// hosts thousands of groups can have thousands of them time out at once
// (a lost node, a stalled process). Each election sends vote requests that
// the same few peers answer one after another; once answers take longer
// than an election timeout, every candidate starts over in a newer term,
// the votes split, and no group elects a leader again (10,000 groups, two
// survivors: 9,883 candidates on one of them ten minutes on). With a gate,
// a member whose election timeout fires campaigns only when the transport
// grants it a turn, one election round long; otherwise it stays a follower
// and counts down another randomized timeout. Holding back a campaign is
// what a slow timer does, so safety is raft's; the turns only bound how
// many rounds run at once. A candidate from a leadership transfer takes no
// turn: it was asked for by a leader or an operator, one group at a time.

// takeCampaignTurn asks the transport's gate for this election round's
// turn, unless the member holds one already; true without a gate and for
// a transfer. Called on the main goroutine only, as is release.
func (r *Raft) takeCampaignTurn() bool {
	if r.campaignRelease != nil {
		return true
	}
	g, ok := r.trans.(WithCampaignGate)
	if !ok || r.candidateFromLeadershipTransfer.Load() {
		return true
	}
	release, ok := g.CampaignTurn()
	if !ok {
		r.logger.Debug("no campaign turn free, waiting as a follower")
		return false
	}
	r.campaignRelease = release
	return true
}

// releaseCampaignTurn gives back the turn held, if any.
func (r *Raft) releaseCampaignTurn() {
	if r.campaignRelease != nil {
		r.campaignRelease()
		r.campaignRelease = nil
	}
}
