package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/kafkaapi"
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

// AlterReassignment proposes the move to the metadata group.
func (b *backend) AlterReassignment(ctx context.Context, topic string, partition int32, target []int32) error {
	_, err := b.n.meta.Propose(ctx, metadata.AlterReassignment{Topic: topic, Partition: partition, Target: target})
	return err
}

// Reassignments lists the moves in the local metadata copy; the node
// always moves partitions.
func (b *backend) Reassignments() ([]kafkaapi.Reassignment, error) {
	var out []kafkaapi.Reassignment
	for _, m := range b.n.meta.State().Reassignments() {
		out = append(out, kafkaapi.Reassignment{Topic: m.Topic, Partition: m.Partition, Replicas: m.Replicas,
			Adding: m.Adding(), Removing: m.Removing()})
	}
	return out, nil
}

// reassignLoop drives the moves of the partitions this node leads, at
// every metadata change and every ReassignInterval. It is owned by the
// Node.
func (n *Node) reassignLoop() {
	defer n.wg.Done()
	tick := time.NewTicker(n.cfg.Tuning.ReassignInterval)
	defer tick.Stop()
	for {
		watch := n.meta.Watch()
		for _, m := range n.meta.State().Reassignments() {
			if n.ctx.Err() != nil {
				return
			}
			lr, ok := n.reps.get(m.Topic, m.Partition)
			if !ok || !lr.rep.IsLeader() {
				continue
			}
			ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Tuning.ReassignStep)
			err := n.moveStep(ctx, lr, m)
			cancel()
			if err != nil && n.ctx.Err() == nil {
				lr.logger.Info("reassignment step failed; retrying", "target", m.Target, "err", err)
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case <-watch:
		case <-tick.C:
		}
	}
}

// moveStep takes the next step of one move on the group this node leads.
func (n *Node) moveStep(ctx context.Context, lr *localReplica, m metadata.PartitionReassignment) error {
	g := lr.rep.Group()
	voters, nonvoters, err := g.Configuration()
	if err != nil {
		return err
	}
	for _, id := range m.Target {
		if slices.Contains(voters, id) {
			continue
		}
		addr, ok := n.addrs.resolve(id)
		if !ok {
			return fmt.Errorf("broker %d has no known Raft address", id)
		}
		g.Throttle(id, true) // its catch-up is paced (replica_move_throttle)
		if !slices.Contains(nonvoters, id) {
			lr.logger.Info("reassignment: adding a replica as non-voter", "node", id)
			return g.AddNonvoter(ctx, id, addr)
		}
		if !n.caughtUp(g, id) {
			return nil // the next step looks again
		}
		lr.logger.Info("reassignment: promoting a caught-up replica", "node", id)
		if err := g.AddVoter(ctx, id, addr); err != nil {
			return err
		}
		g.Throttle(id, false)
	}
	for _, id := range slices.Concat(voters, nonvoters) {
		if slices.Contains(m.Target, id) {
			continue
		}
		if id == n.cfg.NodeID {
			lr.logger.Info("reassignment: this leader leaves; handing leadership over", "to", m.Target[0])
			return g.TransferLeadership(ctx, m.Target[0])
		}
		lr.logger.Info("reassignment: removing a replica", "node", id)
		if err := g.RemoveServer(ctx, id); err != nil {
			return err
		}
	}
	_, err = n.meta.Propose(ctx, metadata.CompleteReassignment{Topic: m.Topic, Partition: m.Partition, Target: m.Target})
	if errors.Is(err, kerr.InvalidRequest) {
		return nil // the move changed meanwhile: the next step follows the new target
	}
	if err == nil {
		lr.logger.Info("reassignment complete", "replicas", m.Target)
	}
	return err
}

// caughtUp reports whether node's log, as its answers to this leader
// show, is within one AppendEntries batch of the leader's.
func (n *Node) caughtUp(g *multiraft.Group, node int32) bool {
	match, ok := g.Progress(node)
	return ok && match+uint64(n.cfg.PartitionRaft.MaxAppendEntries) >= g.LastIndex()
}

// followMoves keeps this node's replicas in step with the metadata's
// replica lists: a group's order of preference follows its partition's
// replicas (and replica.json with it, for a restart before the metadata
// is up), and a replica whose partition no longer names this node, with
// no move in progress, is removed once this node's metadata has caught up
// with the metadata leader (a stale copy, just restarted, must not delete
// a replica that a later move added). It reports whether it had caught up.
func (s *replicaSet) followMoves(state *metadata.Snapshot) (caughtUp bool) {
	caughtUp = s.n.meta.CaughtUp()
	s.removeWhere("a reassignment moved the partition away", func(lr *localReplica) bool {
		p, ok := s.partitionOf(state, lr)
		_, moving := state.Reassignment(lr.info.Topic, lr.info.Partition)
		return caughtUp && ok && !moving && !slices.Contains(p.Replicas, s.n.cfg.NodeID)
	})
	for _, lr := range s.all() {
		p, ok := s.partitionOf(state, lr)
		g := lr.rep.Group()
		if !ok || slices.Equal(g.Members(), p.Replicas) {
			continue
		}
		g.SetMembers(p.Replicas)
		info := lr.info
		info.Replicas = slices.Clone(p.Replicas)
		if err := writeReplicaInfo(filepath.Join(s.n.partitionsDir(), replicaDirName(info.Topic, info.Partition)), info); err != nil {
			lr.logger.Warn("could not record the partition's new replicas", "err", err)
		}
	}
	return caughtUp
}

// partitionOf returns the metadata of a replica's partition, if its topic
// is the replica's (same id).
func (s *replicaSet) partitionOf(state *metadata.Snapshot, lr *localReplica) (metadata.Partition, bool) {
	id, ok := state.TopicID(lr.info.Topic)
	if !ok || lr.id.IsZero() || id != lr.id {
		return metadata.Partition{}, false
	}
	return state.Partition(lr.info.Topic, lr.info.Partition)
}
