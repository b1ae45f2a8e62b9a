package kafkaapi

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// Reassignment is one partition's move in progress.
type Reassignment struct {
	Topic     string
	Partition int32
	// Replicas are every broker holding the partition during the move:
	// the target replicas first, then those being removed.
	Replicas, Adding, Removing []int32
}

// topicPart names a partition in a request.
type topicPart struct {
	topic     string
	partition int32
}

// reassignServed is nil when the backend moves partitions, else what its
// Reassignments answers (kerr.UnsupportedVersion), which both
// reassignment APIs answer.
func (s *Server) reassignServed() error {
	_, err := s.backend.Reassignments()
	return err
}

// startAlterReassignments answers AlterPartitionReassignments: each
// partition is started (or cancelled, with null replicas) in request
// order; a partition named twice gets INVALID_REQUEST, as Kafka answers.
func (s *Server) startAlterReassignments(req *kmsg.AlterPartitionAssignmentsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		err := s.reassignServed()
		if !s.authorizeCluster(ctx, acl.OpAlter) {
			err = errClusterAuth
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), errorMessage(err)
			return resp, nil
		}
		timeout := s.cfg.RequestTimeout
		if req.TimeoutMillis > 0 {
			timeout = min(timeout, time.Duration(req.TimeoutMillis)*time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		seen := map[topicPart]int{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				seen[topicPart{t.Topic, p.Partition}]++
			}
		}
		var keep *keptFactors // v1 without AllowReplicationFactorChange
		if !req.AllowReplicationFactorChange {
			keep = s.keptFactors(ctx)
		}
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition = p.Partition
				var err error
				if seen[topicPart{t.Topic, p.Partition}] > 1 {
					err = fmt.Errorf("%w: partition %d named twice", kerr.InvalidRequest, p.Partition)
				} else {
					err = s.alterReassignment(ctx, t.Topic, p, keep)
				}
				rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), errorMessage(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
}

// alterReassignment starts, changes or cancels one partition's move; with
// keep set, a target of another replication factor is refused first.
func (s *Server) alterReassignment(ctx context.Context, topic string, p kmsg.AlterPartitionAssignmentsRequestTopicPartition, keep *keptFactors) error {
	var target []int32
	if p.Replicas != nil {
		target = slices.Clone(p.Replicas)
		if target == nil {
			target = []int32{}
		}
		if err := keep.check(topic, p.Partition, target); err != nil {
			return err
		}
	}
	return s.backend.AlterReassignment(ctx, topic, p.Partition, target)
}

// keptFactors checks AllowReplicationFactorChange=false (v1, KIP-860) as
// Kafka's controller does (validatePartitionReplicationFactorUnchanged),
// after the target's own checks: a target that names a broker twice or an
// unregistered one is left to the backend (INVALID_REPLICA_ASSIGNMENT),
// and one as long as the replica set the partition is headed for (its
// move's target, else its replicas) passes. It reads this node's view;
// the metadata group refuses any change of replication factor anyway, as
// moves here keep it, so a stale view only changes which error answers.
// Each topic is read once, on its first check, before any of its
// partitions is moved.
type keptFactors struct {
	byName     topicByName
	topics     topicIndex // byName's answers so far, nil for none
	registered map[int32]bool
	heading    map[topicPart]int // the target length of moves in progress
}

func (s *Server) keptFactors(ctx context.Context) *keptFactors {
	view := s.clusterBrokers()
	k := &keptFactors{byName: s.topics(ctx).byName, topics: topicIndex{},
		registered: map[int32]bool{}, heading: map[topicPart]int{}}
	for _, b := range view.Brokers {
		k.registered[b.NodeID] = true
	}
	for _, d := range view.Down {
		k.registered[d.NodeID] = true
	}
	moves, _ := s.backend.Reassignments()
	for _, m := range moves {
		k.heading[topicPart{m.Topic, m.Partition}] = len(m.Replicas) - len(m.Removing)
	}
	return k
}

// check is nil when k is nil (changes allowed) or the target passes.
func (k *keptFactors) check(topic string, partition int32, target []int32) error {
	if k == nil {
		return nil
	}
	t, read := k.topics[topic]
	if !read {
		t = k.byName(topic)
		k.topics[topic] = t
	}
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil
	}
	for i, b := range target {
		if !k.registered[b] || slices.Contains(target[:i], b) {
			return nil
		}
	}
	current, moving := k.heading[topicPart{topic, partition}]
	if !moving {
		current = len(t.Partitions[partition].Replicas)
	}
	if current != len(target) {
		return fmt.Errorf("%w: The replication factor is changed from %d to %d", kerr.InvalidReplicationFactor, current, len(target))
	}
	return nil
}

// startListReassignments answers ListPartitionReassignments: every move
// in progress when no topics are named, else the moves of the named
// partitions (partitions not moving, or unknown, are left out, as Kafka
// does).
func (s *Server) startListReassignments(req *kmsg.ListPartitionReassignmentsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		moves, err := s.backend.Reassignments()
		if !s.authorizeCluster(ctx, acl.OpDescribe) {
			err = errClusterAuth
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), errorMessage(err)
			return resp, nil
		}
		var want map[topicPart]bool
		if req.Topics != nil {
			want = map[topicPart]bool{}
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					want[topicPart{t.Topic, p}] = true
				}
			}
		}
		for _, m := range moves {
			if want != nil && !want[topicPart{m.Topic, m.Partition}] {
				continue
			}
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != m.Topic {
				rt := kmsg.NewListPartitionReassignmentsResponseTopic()
				rt.Topic = m.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = m.Partition
			rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = nonNil(m.Replicas), nonNil(m.Adding), nonNil(m.Removing)
			rt := &resp.Topics[len(resp.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		return resp, nil
	}
}

// nonNil returns s, or an empty slice for nil: the protocol's arrays are
// not nullable here.
func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
