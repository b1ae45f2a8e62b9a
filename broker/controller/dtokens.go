package controller

import (
	"context"
	"time"

	"github.com/minikafka/minikafka-go/metadata"
)

// ExpireDelegationTokens removes the delegation tokens expired by this
// node's clock, if it leads the metadata group: the leader's clock
// decides expiry (Kafka's controller sweeps expired tokens every
// delegation.token.expiry.check.interval.ms). The proposal is bounded by
// Tuning.Proposal; ctx ends it.
func (c *Controller) ExpireDelegationTokens(ctx context.Context) {
	if !c.group.IsLeader() {
		return
	}
	now := time.Now().UnixMilli()
	if !c.fsm.State().HasExpiredDelegationTokens(now) {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, c.cfg.Tuning.Proposal)
	defer cancel()
	if _, err := c.Propose(pctx, metadata.ExpireDelegationTokens{NowMs: now}); err != nil && ctx.Err() == nil {
		c.logger.Debug("delegation token expiry", "err", err)
	}
}
