package kafkabackend

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/partition"
)

var _ kafkaapi.LeaderElection = (*Backend)(nil)

// electPoll is how often a hand-over is checked for its outcome.
const electPoll = 10 * time.Millisecond

// ElectPreferred hands a partition's leadership to its first replica: at
// once where this node leads it, else through an ElectLeaders request to
// the node that does (which hands it over itself). The preferred replica
// must be in sync, as in Kafka; the answer comes once this node sees it
// lead.
func (b *Backend) ElectPreferred(ctx context.Context, topic string, p int32) error {
	state := b.deps.Meta.State()
	mp, ok := state.Partition(topic, p)
	if !ok {
		return fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, topic, p)
	}
	move, _ := state.Reassignment(topic, p)
	pv := b.partitionView(topic, p, mp, move, b.alive(), time.Now())
	if len(pv.Replicas) == 0 {
		return fmt.Errorf("%w: %s-%d has no replicas", kerr.PreferredLeaderNotAvailable, topic, p)
	}
	pref := pv.Replicas[0]
	switch {
	case pv.Leader == pref:
		return kerr.ElectionNotNeeded
	case pv.Leader < 0:
		return fmt.Errorf("%w: %s-%d has no leader to hand over now", kerr.PreferredLeaderNotAvailable, topic, p)
	case !slices.Contains(pv.ISR, pref):
		return fmt.Errorf("%w: replica %d is not in sync", kerr.PreferredLeaderNotAvailable, pref)
	}
	lr, local := b.deps.Replica(topic, p)
	if local && lr.Partition().IsLeader() {
		return handOver(ctx, lr.Partition(), pref)
	}
	if err := b.forwardElection(ctx, pv.Leader, topic, p); err != nil {
		return err
	}
	if local {
		return awaitLeader(ctx, lr.Partition(), pref)
	}
	return nil
}

// handOver transfers r's leadership to node and waits until r sees node
// lead.
func handOver(ctx context.Context, r *partition.Replica, node int32) error {
	if err := r.Group().TransferLeadership(ctx, node); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: handing the leadership to %d", kerr.RequestTimedOut, node)
		}
		return fmt.Errorf("%w: handing the leadership to %d: %v", kerr.PreferredLeaderNotAvailable, node, err)
	}
	return awaitLeader(ctx, r, node)
}

// awaitLeader returns once r sees node lead, or RequestTimedOut when ctx
// ends first.
func awaitLeader(ctx context.Context, r *partition.Replica, node int32) error {
	tick := time.NewTicker(electPoll)
	defer tick.Stop()
	for {
		if id, _, ok := r.LeaderAndEpoch(); ok && id == node {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: replica %d does not lead yet", kerr.RequestTimedOut, node)
		case <-tick.C:
		}
	}
}

// forwardElection asks the leading node to elect the partition's
// preferred replica and returns its answer.
func (b *Backend) forwardElection(ctx context.Context, leader int32, topic string, p int32) error {
	req := kmsg.NewPtrElectLeadersRequest()
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = []kmsg.ElectLeadersRequestTopic{rt}
	if d, ok := ctx.Deadline(); ok {
		req.TimeoutMillis = int32(max(time.Until(d).Milliseconds(), 1))
	}
	kresp, err := b.deps.Coordinators.RequestNode(ctx, leader, req)
	if err != nil {
		return fmt.Errorf("%w: node %d, the leader, did not answer: %v", kerr.RequestTimedOut, leader, err)
	}
	resp := kresp.(*kmsg.ElectLeadersResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("%w: from node %d, the leader", err, leader)
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if t.Topic == topic && rp.Partition == p {
				return kerr.ErrorForCode(rp.ErrorCode)
			}
		}
	}
	return fmt.Errorf("%w: node %d did not answer for %s-%d", kerr.UnknownServerError, leader, topic, p)
}
