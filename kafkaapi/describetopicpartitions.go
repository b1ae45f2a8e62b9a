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

// describePartitionLimit bounds the partitions one DescribeTopicPartitions
// answers, whatever the client asks: Kafka's
// max.request.partition.size.limit default.
const describePartitionLimit = 2000

// errCursorNotListed is the INVALID_REQUEST of a DescribeTopicPartitions
// whose cursor names a topic the request does not list.
var errCursorNotListed = fmt.Errorf("%w: the topic list must contain the cursor's topic", kerr.InvalidRequest)

// startDescribeTopicPartitions answers DescribeTopicPartitions v0
// (KIP-966) from Backend.Cluster, the view Metadata answers from, as
// Kafka's DescribeTopicPartitionsRequestHandler does: topics sorted by
// name from the cursor on, at most min(ResponsePartitionLimit, 2000)
// partitions (at least 1), and a next cursor where the answer stops.
// With no topics named, every topic the client may DESCRIBE; a named one
// it may not answers TOPIC_AUTHORIZATION_FAILED after the others. A bad
// cursor fails every named topic with INVALID_REQUEST.
func (s *Server) startDescribeTopicPartitions(req *kmsg.DescribeTopicPartitionsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
		view := s.metadataView(ctx, len(req.Topics) == 0)
		names, err := describeTopicNames(req, view.Topics)
		if err != nil {
			for _, rt := range req.Topics {
				resp.Topics = append(resp.Topics, describedTopicError(rt.Topic, 0, err))
			}
			return resp, nil
		}
		all := len(req.Topics) == 0
		remaining := max(min(req.ResponsePartitionLimit, describePartitionLimit), 1)
		var denied []kmsg.DescribeTopicPartitionsResponseTopic
		for _, name := range names {
			if !s.authorizeTopic(ctx, acl.OpDescribe, name) {
				if !all {
					denied = append(denied, describedTopicError(name, 0, kerr.TopicAuthorizationFailed))
				}
				continue
			}
			if remaining == 0 {
				resp.NextCursor = describeCursor(name, 0)
				break
			}
			t := view.byName(name)
			if t == nil {
				if !all {
					resp.Topics = append(resp.Topics, describedTopicError(name, s.topicOps(ctx, name), missingTopicError(name)))
				}
				continue
			}
			start := int32(0)
			if req.Cursor != nil && req.Cursor.Topic == name {
				start = req.Cursor.Partition
			}
			rt, next := describedTopic(t, start, remaining)
			rt.AuthorizedOperations = s.topicOps(ctx, name)
			resp.Topics = append(resp.Topics, rt)
			if next >= 0 {
				resp.NextCursor = describeCursor(name, next)
				break
			}
			remaining -= int32(len(rt.Partitions))
		}
		resp.Topics = append(resp.Topics, denied...)
		return resp, nil
	}
}

// describeTopicNames are the topics a DescribeTopicPartitions asks for,
// sorted, each once, from the cursor's topic on; or why the request is
// invalid.
func describeTopicNames(req *kmsg.DescribeTopicPartitionsRequest, topics []TopicView) ([]string, error) {
	from := ""
	if req.Cursor != nil {
		from = req.Cursor.Topic
	}
	var names []string
	if len(req.Topics) == 0 {
		for _, t := range topics {
			names = append(names, t.Name)
		}
	} else {
		for _, rt := range req.Topics {
			names = append(names, rt.Topic)
		}
		if req.Cursor != nil && !slices.Contains(names, from) {
			return nil, errCursorNotListed
		}
	}
	if req.Cursor != nil && req.Cursor.Partition < 0 {
		return nil, fmt.Errorf("%w: the cursor's partition %d is negative", kerr.InvalidRequest, req.Cursor.Partition)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n < from })
	slices.Sort(names)
	return slices.Compact(names), nil
}

// describedTopic answers up to limit of t's partitions from start on, and
// the partition to continue from, -1 when none is left.
func describedTopic(t *TopicView, start, limit int32) (kmsg.DescribeTopicPartitionsResponseTopic, int32) {
	rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	rt.Topic = kmsg.StringPtr(t.Name)
	rt.TopicID, rt.IsInternal = t.ID, t.Internal
	next := int32(-1)
	for _, p := range t.Partitions {
		if p.Partition < start {
			continue
		}
		if int32(len(rt.Partitions)) == limit {
			next = p.Partition
			break
		}
		rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		rp.Partition, rp.LeaderID, rp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
		rp.Replicas, rp.ISR, rp.OfflineReplicas = nonNil(p.Replicas), nonNil(p.ISR), nonNil(p.OfflineReplicas)
		// Raft elects only from a quorum: there are no eligible leader
		// replicas outside the ISR (KIP-966's ELR) to report.
		rp.EligibleLeaderReplicas, rp.LastKnownELR = []int32{}, []int32{}
		if p.Leader < 0 {
			rp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt, next
}

// missingTopicError is what a named topic that does not exist answers.
func missingTopicError(name string) error {
	if ValidateTopicName(name) != nil {
		return kerr.InvalidTopicException
	}
	return kerr.UnknownTopicOrPartition
}

// describedTopicError answers a topic with err; ops are the client's
// authorized operations on it, or 0 to leave them unreported.
func describedTopicError(name string, ops int32, err error) kmsg.DescribeTopicPartitionsResponseTopic {
	rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	rt.Topic = kmsg.StringPtr(name)
	rt.ErrorCode = ErrorCode(err)
	rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
	if ops != 0 {
		rt.AuthorizedOperations = ops
	}
	return rt
}

func describeCursor(topic string, partition int32) *kmsg.DescribeTopicPartitionsResponseNextCursor {
	c := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
	c.Topic, c.Partition = topic, partition
	return &c
}

// topicOps are the operations the client may do on a topic.
func (s *Server) topicOps(ctx context.Context, topic string) int32 {
	return s.authorizedOps(ctx, topicOperations, acl.ResourceTopic, topic)
}
