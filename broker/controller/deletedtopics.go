package controller

import (
	"context"

	"github.com/minikafka/minikafka-go/metadata"
)

// ReportRemovedReplicas tells the metadata group which deleted topics this
// node holds no replica of any more (metadata.ReplicasRemoved), so that
// their ids are forgotten once every broker has said so. held lists the
// topic ids of the replicas the node still holds, open or on disk; it is
// asked only when some deleted topic is still to be reported. Each
// proposal is bounded by Tuning.Proposal; ctx ends them all.
func (c *Controller) ReportRemovedReplicas(ctx context.Context, held func() (map[metadata.TopicID]bool, error)) {
	state := c.fsm.State()
	if _, registered := state.Broker(c.cfg.NodeID); !registered {
		return
	}
	pending := state.DeletedTopicsToReport(c.cfg.NodeID)
	if len(pending) == 0 {
		return
	}
	have, err := held()
	if err != nil {
		c.logger.Warn("deleted topics: cannot tell which replicas are left", "err", err)
		return
	}
	var gone []metadata.TopicID
	for _, id := range pending {
		if !have[id] {
			gone = append(gone, id)
		}
	}
	for len(gone) > 0 {
		part := gone[:min(len(gone), metadata.MaxReplicasRemovedTopics)]
		gone = gone[len(part):]
		pctx, cancel := context.WithTimeout(ctx, c.cfg.Tuning.Proposal)
		_, err := c.Propose(pctx, metadata.ReplicasRemoved{Broker: c.cfg.NodeID, Topics: part})
		cancel()
		if err != nil {
			c.logger.Debug("deleted topics: report of removed replicas not applied", "topics", len(part), "err", err)
			return
		}
	}
}
