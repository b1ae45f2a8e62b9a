package kafkabackend

import (
	"context"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
)

// Partition reassignment: the metadata half of a move. The replicas'
// half, the Raft membership steps on the partitions this node leads and
// the following of replica lists, is broker/replicas (moves.go).

// AlterReassignment proposes the move to the metadata group.
func (b *Backend) AlterReassignment(ctx context.Context, topic string, partition int32, target []int32) error {
	_, err := b.deps.Meta.Propose(ctx, metadata.AlterReassignment{Topic: topic, Partition: partition, Target: target})
	return err
}

// Reassignments lists the moves in the local metadata copy; the node
// always moves partitions.
func (b *Backend) Reassignments() ([]kafkaapi.Reassignment, error) {
	var out []kafkaapi.Reassignment
	for _, m := range b.deps.Meta.State().Reassignments() {
		out = append(out, kafkaapi.Reassignment{Topic: m.Topic, Partition: m.Partition, Replicas: m.Replicas,
			Adding: m.Adding(), Removing: m.Removing()})
	}
	return out, nil
}
