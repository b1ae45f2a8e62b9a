package controller

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/minikafka/minikafka-go/internal/drain"
	"github.com/minikafka/minikafka-go/metadata"
)

// Self-healing: on the metadata leader, a registered node that gossip has
// not seen for Config.NodeUnavailableTimeout is replaced. Each partition
// that names it (and is not moving already) is moved to the live node
// holding the fewest replicas (drain.Plan), a move like any other (which
// the partition's leader drives: broker/replicas' moves.go); a metadata
// voter it was is replaced by a live non-voter. The clock is the leader's
// own: a new leader starts counting afresh, so it only ever waits longer.
// A node that returns later finds its partitions gone from the metadata
// and removes its copies (the broker's followMoves).

// healer is what the duties loop remembers between steps; only that
// goroutine touches it.
type healer struct {
	goneSince map[int32]time.Time // registered nodes gossip does not see, since when
	warned    map[int32]bool      // nodes whose replacement could not be planned, logged once
}

// heal replaces the nodes gone too long; called by step on the leader.
func (c *Controller) heal(ctx context.Context, state *metadata.Snapshot) error {
	if c.cfg.NodeUnavailableTimeout <= 0 {
		return nil
	}
	h := &c.healer
	if h.goneSince == nil {
		h.goneSince, h.warned = map[int32]time.Time{}, map[int32]bool{}
	}
	var live []int32
	for _, m := range c.deps.Members.Members() {
		live = append(live, m.ID)
	}
	now := time.Now()
	var errs []error
	for _, id := range state.BrokerIDs() {
		if slices.Contains(live, id) {
			delete(h.goneSince, id)
			delete(h.warned, id)
			continue
		}
		since, ok := h.goneSince[id]
		if !ok {
			h.goneSince[id] = now
			continue
		}
		if now.Sub(since) < c.cfg.NodeUnavailableTimeout {
			continue
		}
		errs = append(errs, c.replaceReplicas(ctx, state, id, live), c.replaceMetaVoter(ctx, id, live))
	}
	return errors.Join(errs...)
}

// replaceReplicas starts moving the replicas of the partitions that name
// gone, and are not moving already, to live nodes.
func (c *Controller) replaceReplicas(ctx context.Context, state *metadata.Snapshot, gone int32, live []int32) error {
	var parts []drain.Partition
	for _, t := range state.Topics() {
		for i, p := range t.Partitions {
			parts = append(parts, drain.Partition{Topic: t.Name, Partition: int32(i), Replicas: p.Replicas})
		}
	}
	plan, err := drain.Plan(parts, live, gone)
	if err != nil {
		if !c.healer.warned[gone] {
			c.healer.warned[gone] = true
			c.logger.Warn("a node is gone but its replicas have nowhere to go", "node", gone, "err", err)
		}
		return nil
	}
	for _, p := range plan {
		if _, moving := state.Reassignment(p.Topic, p.Partition); moving {
			continue
		}
		c.logger.Info("replacing the replica of a node gone too long", "node", gone, "topic", p.Topic, "partition", p.Partition, "replicas", p.Replicas)
		if _, err := c.Propose(ctx, metadata.AlterReassignment{Topic: p.Topic, Partition: p.Partition, Target: p.Replicas}); err != nil {
			return err
		}
	}
	return nil
}

// replaceMetaVoter takes gone out of the metadata group, promoting a live
// non-voter in its place if gone was a voter. A voter is only removed once
// its replacement votes, so the number of voters never drops.
func (c *Controller) replaceMetaVoter(ctx context.Context, gone int32, live []int32) error {
	g := c.group
	voters, nonvoters, err := g.Configuration()
	if err != nil {
		return err
	}
	switch {
	case slices.Contains(nonvoters, gone):
	case !slices.Contains(voters, gone):
		return nil
	default:
		i := slices.IndexFunc(nonvoters, func(id int32) bool { return slices.Contains(live, id) })
		if i < 0 {
			return nil // nobody to promote: keep the voter, it may come back
		}
		addr, ok := c.deps.Resolve(nonvoters[i])
		if !ok {
			return nil
		}
		c.logger.Info("promoting a metadata non-voter in place of a node gone too long", "node", gone, "voter", nonvoters[i])
		if err := g.AddVoter(ctx, nonvoters[i], addr); err != nil {
			return err
		}
	}
	c.logger.Info("removing a node gone too long from the metadata group", "node", gone)
	return g.RemoveServer(ctx, gone)
}
