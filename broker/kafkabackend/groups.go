package kafkabackend

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
)

// Consumer groups. Group G's coordinator is the leader of partition
// metadata.GroupPartition(G, n) of the internal topic __consumer_offsets,
// which the cluster creates the first time a client looks for a
// coordinator. Its partitions are Raft groups like any other; their FSMs
// feed a materialised view of committed offsets and group metadata, so a
// new leader coordinates at once.

// OffsetsPartition returns the partition of __consumer_offsets that holds
// group, creating the topic on first need. Until the topic exists and the
// partition has a leader it answers COORDINATOR_NOT_AVAILABLE, which
// clients retry, as Kafka does.
func (b *Backend) OffsetsPartition(ctx context.Context, group string) (int32, error) {
	n, err := b.internalPartitions(ctx, metadata.ConsumerOffsetsTopic, b.cfg.OffsetsTopicPartitions, b.cfg.OffsetsTopicReplicationFactor)
	if err != nil {
		return -1, err
	}
	return metadata.GroupPartition(group, n), nil
}

// CoordinatorNode is the node that coordinates group now: the leader of
// its __consumer_offsets partition, or COORDINATOR_NOT_AVAILABLE while that
// partition has none.
func (b *Backend) CoordinatorNode(ctx context.Context, group string) (int32, error) {
	p, err := b.OffsetsPartition(ctx, group)
	if err != nil {
		return -1, err
	}
	leader, _, ok := b.deps.PartitionLeader(metadata.ConsumerOffsetsTopic, p)
	if !ok {
		return -1, fmt.Errorf("%w: %s-%d has no leader yet", kerr.CoordinatorNotAvailable, metadata.ConsumerOffsetsTopic, p)
	}
	return leader, nil
}

// GroupCoordinator returns this node's coordinator of group: NOT_COORDINATOR
// if another node leads the group's partition (or __consumer_offsets does
// not exist yet: clients find the coordinator first, which creates it),
// COORDINATOR_LOAD_IN_PROGRESS while this node takes over.
func (b *Backend) GroupCoordinator(ctx context.Context, group string) (kafkaapi.GroupCoordinator, error) {
	parts, ok := b.deps.Meta.State().TopicPartitions(metadata.ConsumerOffsetsTopic)
	if !ok {
		return nil, fmt.Errorf("%w: %s does not exist yet", kerr.NotCoordinator, metadata.ConsumerOffsetsTopic)
	}
	c, err := b.deps.Coordinators.Group(ctx, metadata.GroupPartition(group, parts))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// GroupCoordinators returns every coordinator this node runs.
func (b *Backend) GroupCoordinators() ([]kafkaapi.GroupCoordinator, error) {
	return b.deps.Coordinators.Groups()
}
