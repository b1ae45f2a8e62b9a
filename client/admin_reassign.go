package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/drain"
)

// Reassignment is a partition's move in progress, as Kafka's
// ListPartitionReassignments describes it.
type Reassignment struct {
	Topic     string
	Partition int32
	// Replicas are every broker holding the partition during the move:
	// the target first, then the replicas leaving.
	Replicas, Adding, Removing []int32
}

// Move is one partition's new replicas, preferred leader first.
type Move struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// Reassign starts moving partitions (Kafka's AlterPartitionReassignments):
// the brokers change the partition's Raft group to the new replicas in the
// background; ListReassignments shows the moves still running. A move with
// nil Replicas cancels that partition's move. Errors of single partitions
// are joined, each naming its partition and wrapping a *KafkaError
// (INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC_OR_PARTITION,
// NO_REASSIGNMENT_IN_PROGRESS).
func (a *Admin) Reassign(ctx context.Context, moves ...Move) error {
	if len(moves) == 0 {
		return nil
	}
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = int32(a.cfg.requestTimeout.Milliseconds())
	for _, m := range moves {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != m.Topic {
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = m.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = m.Partition, m.Replicas
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	var perPartition []error
	err := a.askAny(ctx, req, func(resp kmsg.Response) error {
		r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
		if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
			return err
		}
		perPartition = perPartition[:0]
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if err := kafkaErr(p.ErrorCode, p.ErrorMessage); err != nil {
					perPartition = append(perPartition, fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, err))
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return errors.Join(perPartition...)
}

// ListReassignments returns the moves in progress, by topic then
// partition. It asks the controller, as Kafka's clients do: the freshest
// view (another broker's copy of the metadata may lag it a little).
func (a *Admin) ListReassignments(ctx context.Context) ([]Reassignment, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = int32(a.cfg.requestTimeout.Milliseconds())
	var out []Reassignment
	err := a.askController(ctx, req, func(resp kmsg.Response) error {
		r := resp.(*kmsg.ListPartitionReassignmentsResponse)
		if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
			return err
		}
		out = out[:0]
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				out = append(out, Reassignment{Topic: t.Topic, Partition: p.Partition, Replicas: p.Replicas,
					Adding: p.AddingReplicas, Removing: p.RemovingReplicas})
			}
		}
		return nil
	})
	slices.SortFunc(out, func(x, y Reassignment) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	return out, err
}

// ErrNoTarget means a node cannot be drained: some partition has no live
// broker left to take its replica.
var ErrNoTarget = drain.ErrNoTarget

// PlanDrain returns the moves that take every replica off node: in each
// partition that names it, node is replaced by the live broker (one that
// Metadata lists) not yet a replica that holds the fewest replicas,
// counting the moves planned so far; ties go to the lowest id. The new
// replica takes node's place in the list, so a partition whose preferred
// leader was node gets a new one there. Internal topics are included.
func PlanDrain(cluster *ClusterDetail, node int32) ([]Move, error) {
	var live []int32
	for _, b := range cluster.Brokers {
		live = append(live, b.NodeID)
	}
	var parts []drain.Partition
	for _, t := range cluster.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, drain.Partition{Topic: t.Name, Partition: p.Partition, Replicas: p.Replicas})
		}
	}
	plan, err := drain.Plan(parts, live, node)
	if err != nil {
		return nil, err
	}
	moves := make([]Move, len(plan))
	for i, p := range plan {
		moves[i] = Move(p)
	}
	return moves, nil
}
