package coordhost

import (
	"context"
	"time"
)

// Offset and transactional id expiry are decisions of the leaders of the
// internal topics' partitions, taken with their clocks: the coordinators
// they run write tombstones through the partitions' Raft groups
// (groupcoord.Coordinator.ExpireOffsets,
// txncoord.Coordinator.ExpireTransactionalIDs), so every replica's view
// forgets the same state. Coordinators still loading are skipped until the
// next round.

// ExpireOffsets has each group coordinator this node runs expire the
// offsets past Config.OffsetsRetention.
func (h *Host) ExpireOffsets() {
	coords, _ := h.groups.running()
	for _, c := range coords {
		ctx, cancel := context.WithTimeout(h.ctx, h.cfg.Tuning.Proposal)
		got, err := c.ExpireOffsets(ctx, time.Now(), h.cfg.OffsetsRetention)
		cancel()
		if err != nil {
			h.logger.Debug("offset expiry incomplete", "expired", got.Offsets, "groups_removed", got.Groups, "err", err)
		}
	}
}

// ExpireTransactionalIDs has each transaction coordinator this node runs
// forget the transactional ids idle past Deps.TransactionalIDExpiration.
func (h *Host) ExpireTransactionalIDs() {
	coords, _ := h.txns.running()
	expiration := h.deps.TransactionalIDExpiration()
	for _, c := range coords {
		ctx, cancel := context.WithTimeout(h.ctx, h.cfg.Tuning.Proposal)
		removed, err := c.ExpireTransactionalIDs(ctx, time.Now(), expiration)
		cancel()
		if err != nil {
			h.logger.Debug("transactional id expiry incomplete", "expired", removed, "err", err)
		}
	}
}
