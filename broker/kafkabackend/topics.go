package kafkabackend

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
)

// Topic administration: creating and deleting topics and growing their
// partitions, each through the metadata group.

// CreateTopic creates a topic through the metadata group, placing its
// replicas on the live brokers, and waits briefly for its leaders.
func (b *Backend) CreateTopic(ctx context.Context, spec kafkaapi.TopicSpec, validateOnly bool) (kafkaapi.CreatedTopic, error) {
	if err := b.deps.RefuseNewPartitions(); err != nil {
		return kafkaapi.CreatedTopic{}, err
	}
	parts, rf := spec.Partitions, spec.ReplicationFactor
	if parts == -1 {
		parts = b.cfg.DefaultPartitions
	}
	if rf == -1 {
		rf = b.cfg.DefaultReplicationFactor
	}
	if metadata.IsInternal(spec.Name) {
		return kafkaapi.CreatedTopic{}, fmt.Errorf("%w: %s is internal; the cluster creates it when first needed", kerr.InvalidRequest, spec.Name)
	}
	state := b.deps.Meta.State()
	cmd, err := b.placeTopic(state, spec.Name, parts, rf)
	if err != nil {
		return kafkaapi.CreatedTopic{}, err
	}
	cmd.Configs = spec.Configs
	if validateOnly {
		next, _, err := state.Apply(state.AppliedIndex()+1, cmd)
		if err != nil {
			return kafkaapi.CreatedTopic{}, fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
		}
		id, _ := next.TopicID(spec.Name)
		return kafkaapi.CreatedTopic{ID: id, Partitions: parts, ReplicationFactor: rf}, nil
	}
	if _, err := b.deps.Meta.Propose(ctx, cmd); err != nil {
		return kafkaapi.CreatedTopic{}, err
	}
	id, _ := b.deps.Meta.State().TopicID(spec.Name)
	return kafkaapi.CreatedTopic{ID: id, Partitions: parts, ReplicationFactor: rf}, nil
}

// WaitTopicLeaders returns once every partition of the topics has a
// leader, or after Config.TopicLeaders (kafkaapi.TopicLeaders).
func (b *Backend) WaitTopicLeaders(ctx context.Context, topics []string) {
	wctx, cancel := context.WithTimeout(ctx, b.cfg.TopicLeaders)
	defer cancel()
	b.deps.Meta.WaitFor(wctx, func(s *metadata.Snapshot) bool {
		for _, topic := range topics {
			if !s.TopicLed(topic) {
				return false
			}
		}
		return true
	})
}

// DeleteTopic deletes a topic through the metadata group; every node
// then removes its replicas (replicas.Set.removeDeleted), a node that is
// down when it returns.
func (b *Backend) DeleteTopic(ctx context.Context, topic string) error {
	if metadata.IsInternal(topic) {
		return fmt.Errorf("%w: %s is internal and cannot be deleted", kerr.InvalidTopicException, topic)
	}
	if _, ok := b.deps.Meta.State().TopicID(topic); !ok {
		return fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, topic)
	}
	_, err := b.deps.Meta.Propose(ctx, metadata.DeleteTopic{Name: topic})
	return err
}

// CreatePartitions grows a topic, placing the new partitions' replicas on
// the live brokers as CreateTopic does. The internal topic keeps its
// partitions: groups are mapped to them by count.
func (b *Backend) CreatePartitions(ctx context.Context, topic string, count int32, validateOnly bool) error {
	if err := b.deps.RefuseNewPartitions(); err != nil {
		return err
	}
	if metadata.IsInternal(topic) {
		return fmt.Errorf("%w: the partitions of %s map groups to coordinators and cannot change", kerr.InvalidRequest, topic)
	}
	state := b.deps.Meta.State()
	t, ok := state.Topic(topic)
	if !ok {
		return fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, topic)
	}
	have := int32(len(t.Partitions))
	if count <= have {
		return fmt.Errorf("%w: topic %q has %d partitions; the new count must be larger", kerr.InvalidPartitions, topic, have)
	}
	if err := state.CheckPartitionLimit(topic, int(count-have), b.cfg.MaxPartitions); err != nil {
		return fmt.Errorf("%w: %w", kerr.PolicyViolation, err)
	}
	rf := len(t.Partitions[0].Replicas)
	live := b.liveBrokers(state)
	if rf > len(live) {
		return fmt.Errorf("%w: replication factor %d is larger than the %d live brokers", kerr.InvalidReplicationFactor, rf, len(live))
	}
	assignment, err := metadata.Place(live, state.Load(), count-have, int16(rf))
	if err != nil {
		return fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
	}
	if err := state.CheckNodeReplicaLimit(topic, assignment, b.cfg.MaxNodeReplicas); err != nil {
		return fmt.Errorf("%w: %w", kerr.PolicyViolation, err)
	}
	cmd := metadata.CreatePartitions{Topic: topic, Count: count, Assignment: assignment,
		MaxClusterPartitions: b.cfg.MaxPartitions, MaxNodeReplicas: b.cfg.MaxNodeReplicas}
	if validateOnly {
		if _, _, err := state.Apply(state.AppliedIndex()+1, cmd); err != nil {
			return fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
		}
		return nil
	}
	_, err = b.deps.Meta.Propose(ctx, cmd)
	return err
}

// placeTopic checks that a topic can be created now and places its
// replicas on the live brokers.
func (b *Backend) placeTopic(state *metadata.Snapshot, name string, parts int32, rf int16) (metadata.CreateTopic, error) {
	if !state.Initialized() {
		return metadata.CreateTopic{}, fmt.Errorf("%w: the cluster is not formed yet", kerr.NotController)
	}
	if _, ok := state.TopicID(name); ok {
		return metadata.CreateTopic{}, fmt.Errorf("%w: topic %q already exists", kerr.TopicAlreadyExists, name)
	}
	if err := state.CheckPartitionLimit(name, int(parts), b.cfg.MaxPartitions); err != nil {
		return metadata.CreateTopic{}, fmt.Errorf("%w: %w", kerr.PolicyViolation, err)
	}
	live := b.liveBrokers(state)
	if int(rf) > len(live) {
		return metadata.CreateTopic{}, fmt.Errorf("%w: replication factor %d is larger than the %d live brokers",
			kerr.InvalidReplicationFactor, rf, len(live))
	}
	assignment, err := metadata.Place(live, state.Load(), parts, rf)
	if err != nil {
		return metadata.CreateTopic{}, fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
	}
	if err := state.CheckNodeReplicaLimit(name, assignment, b.cfg.MaxNodeReplicas); err != nil {
		return metadata.CreateTopic{}, fmt.Errorf("%w: %w", kerr.PolicyViolation, err)
	}
	return metadata.CreateTopic{Name: name, Partitions: parts, ReplicationFactor: rf, Assignment: assignment,
		MaxClusterPartitions: b.cfg.MaxPartitions, MaxNodeReplicas: b.cfg.MaxNodeReplicas}, nil
}

// liveBrokers lists the registered brokers gossip sees alive.
func (b *Backend) liveBrokers(state *metadata.Snapshot) []int32 {
	alive := b.alive()
	var live []int32
	for _, id := range state.BrokerIDs() {
		if alive[id] {
			live = append(live, id)
		}
	}
	return live
}

var _ kafkaapi.TopicIDs = (*Backend)(nil)

// TopicNameByID is the name of the topic whose id is id, from the local
// metadata state (Fetch v13+).
func (b *Backend) TopicNameByID(id [16]byte) (string, bool) {
	return b.deps.Meta.State().TopicNameByID(metadata.TopicID(id))
}

// TopicNames are every topic's names, sorted (kafkaapi.LeaderLookup).
func (b *Backend) TopicNames() []string { return b.deps.Meta.State().TopicNames() }

// TopicIDByName is a topic's id (kafkaapi.LeaderLookup); a topic without
// one is not found by id either.
func (b *Backend) TopicIDByName(name string) ([16]byte, bool) {
	id, ok := b.deps.Meta.State().TopicID(name)
	return [16]byte(id), ok && id != (metadata.TopicID{})
}
