package replicas

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/multiraft"
)

// Partition reassignment. AlterPartitionReassignments records a move in
// the metadata (metadata.AlterReassignment); from then on the partition's
// replicas are its target followed by the replicas leaving, so every node
// involved runs the group (reconcile opens a new replica with
// GroupSpec.Join). The partition's leader then changes the Raft group one
// step at a time, each step a committed configuration change:
//
//  1. each target node not yet in the group is added as a non-voter;
//  2. once its answers show it within MaxAppendEntries entries of the
//     leader's log, it is promoted to voter;
//  3. when every target node votes, the others are removed (a leader that
//     is leaving hands leadership to a target node first);
//  4. the leader proposes metadata.CompleteReassignment, after which the
//     nodes no longer named remove their copies (reconcile).
//
// A cancelled or changed move is driven the same way towards its new
// target. The steps are idempotent, so a new leader picks up where the
// old one stopped.

// reassignLoop drives the moves of the partitions this node leads, at
// every metadata change and every ReassignInterval. It is owned by the Set
// (Start, Close).
func (s *Set[E]) reassignLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.Tuning.ReassignInterval)
	defer tick.Stop()
	for {
		watch := s.deps.Meta.Watch()
		for _, m := range s.deps.Meta.State().Reassignments() {
			if s.ctx.Err() != nil {
				return
			}
			r, ok := s.Get(m.Topic, m.Partition)
			if !ok || !r.rep.IsLeader() {
				continue
			}
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Tuning.ReassignStep)
			err := s.moveStep(ctx, r, m)
			cancel()
			if err != nil && s.ctx.Err() == nil {
				r.logger.Info("reassignment step failed; retrying", "target", m.Target, "err", err)
			}
		}
		select {
		case <-s.ctx.Done():
			return
		case <-watch:
		case <-tick.C:
		}
	}
}

// moveStep takes the next step of one move on the group this node leads.
func (s *Set[E]) moveStep(ctx context.Context, r *Replica[E], m metadata.PartitionReassignment) error {
	g := r.rep.Group()
	voters, nonvoters, err := g.Configuration()
	if err != nil {
		return err
	}
	for _, id := range m.Target {
		if slices.Contains(voters, id) {
			continue
		}
		addr, ok := s.deps.Resolve(id)
		if !ok {
			return fmt.Errorf("broker %d has no known Raft address", id)
		}
		g.Throttle(id, true) // its catch-up is paced (replica_move_throttle)
		if !slices.Contains(nonvoters, id) {
			r.logger.Info("reassignment: adding a replica as non-voter", "node", id)
			return g.AddNonvoter(ctx, id, addr)
		}
		if !s.caughtUp(g, id) {
			return nil // the next step looks again
		}
		r.logger.Info("reassignment: promoting a caught-up replica", "node", id)
		if err := g.AddVoter(ctx, id, addr); err != nil {
			return err
		}
		g.Throttle(id, false)
	}
	for _, id := range slices.Concat(voters, nonvoters) {
		if slices.Contains(m.Target, id) {
			continue
		}
		if id == s.cfg.NodeID {
			r.logger.Info("reassignment: this leader leaves; handing leadership over", "to", m.Target[0])
			return g.TransferLeadership(ctx, m.Target[0])
		}
		r.logger.Info("reassignment: removing a replica", "node", id)
		if err := g.RemoveServer(ctx, id); err != nil {
			return err
		}
	}
	_, err = s.deps.Meta.Propose(ctx, metadata.CompleteReassignment{Topic: m.Topic, Partition: m.Partition, Target: m.Target})
	if errors.Is(err, kerr.InvalidRequest) {
		return nil // the move changed meanwhile: the next step follows the new target
	}
	if err == nil {
		r.logger.Info("reassignment complete", "replicas", m.Target)
	}
	return err
}

// caughtUp reports whether node's log, as its answers to this leader
// show, is within one AppendEntries batch of the leader's.
func (s *Set[E]) caughtUp(g *multiraft.Group, node int32) bool {
	match, ok := g.Progress(node)
	return ok && match+uint64(s.cfg.Raft.MaxAppendEntries) >= g.LastIndex()
}

// followMoves keeps this node's replicas in step with the metadata's
// replica lists: a group's order of preference follows its partition's
// replicas (and replica.json with it, for a restart before the metadata
// is up), and a replica whose partition no longer names this node, with
// no move in progress, is removed once this node's metadata has caught up
// with the metadata leader (a stale copy, just restarted, must not delete
// a replica that a later move added). It reports whether it had caught up.
func (s *Set[E]) followMoves(state *metadata.Snapshot) (caughtUp bool) {
	caughtUp = s.deps.Meta.CaughtUp()
	s.removeWhere("a reassignment moved the partition away", func(r *Replica[E]) bool {
		p, ok := partitionOf(state, r)
		_, moving := state.Reassignment(r.info.Topic, r.info.Partition)
		return caughtUp && ok && !moving && !slices.Contains(p.Replicas, s.cfg.NodeID)
	})
	for _, r := range s.All() {
		p, ok := partitionOf(state, r)
		g := r.rep.Group()
		if !ok || slices.Equal(g.Members(), p.Replicas) {
			continue
		}
		g.SetMembers(p.Replicas)
		info := r.info
		info.Replicas = slices.Clone(p.Replicas)
		if err := writeInfo(s.fs(), s.dir(info.Topic, info.Partition), info); err != nil {
			r.logger.Warn("could not record the partition's new replicas", "err", err)
		}
	}
	return caughtUp
}

// partitionOf returns the metadata of a replica's partition, if its topic
// is the replica's (same id).
func partitionOf[E any](state *metadata.Snapshot, r *Replica[E]) (metadata.Partition, bool) {
	id, ok := state.TopicID(r.info.Topic)
	if !ok || r.id.IsZero() || id != r.id {
		return metadata.Partition{}, false
	}
	return state.Partition(r.info.Topic, r.info.Partition)
}
