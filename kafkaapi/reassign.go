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
					var target []int32
					if p.Replicas != nil {
						target = slices.Clone(p.Replicas)
						if target == nil {
							target = []int32{}
						}
					}
					err = s.backend.AlterReassignment(ctx, t.Topic, p.Partition, target)
				}
				rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), errorMessage(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
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
