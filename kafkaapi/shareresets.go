package kafkaapi

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/sharepart"
)

// The share-offset resets, AlterShareGroupOffsets and
// DeleteShareGroupOffsets: each share partition named gets a new state
// (a start offset, or none) of the next state epoch, which fences the
// data partitions' leaders until they reload it. As in Kafka they go to
// the group's coordinator, which refuses them while the share group has
// members (NON_EMPTY_GROUP).

// shareResets collects a request's share partitions to reset.
type shareResets struct {
	tps    []sharepart.TopicPartition
	starts []int64
	at     []*int16 // where each one's error code goes
}

func (r *shareResets) add(tp sharepart.TopicPartition, start int64, code *int16) {
	r.tps, r.starts, r.at = append(r.tps, tp), append(r.starts, start), append(r.at, code)
}

// run resets them and fills in the codes.
func (r *shareResets) run(ctx context.Context, so ShareOffsets, group string) {
	if len(r.tps) == 0 {
		return
	}
	for i, err := range so.ResetShareStates(ctx, group, r.tps, r.starts) {
		*r.at[i] = ErrorCode(err)
	}
}

// shareResetCheck is a reset request's group check: UNSUPPORTED_VERSION
// without the capability, GROUP_AUTHORIZATION_FAILED without op on it,
// the coordinator lookup's error (NOT_COORDINATOR on another node),
// GROUP_ID_NOT_FOUND for a classic or consumer group, NON_EMPTY_GROUP
// while the share group has members. A group the coordinator does not
// know is taken as an empty share group, for both (Kafka's Alter creates
// it; its Delete answers GROUP_ID_NOT_FOUND, but here share partitions
// may have state without a group: ShareFetch does not check membership).
func (s *Server) shareResetCheck(ctx context.Context, group string, op acl.Operation) (ShareOffsets, error) {
	so, _ := s.backend.(ShareOffsets)
	if so == nil {
		return nil, kerr.UnsupportedVersion
	}
	c, err := s.coordinator(ctx, group, op)
	if err != nil {
		return nil, err
	}
	d := c.DescribeShareGroup(group)
	switch {
	case d.ErrorCode == kerr.GroupIDNotFound.Code:
		if groupOfOtherType(c, group) {
			return nil, kerr.GroupIDNotFound
		}
	case d.ErrorCode != 0:
		return nil, kerr.ErrorForCode(d.ErrorCode)
	case len(d.Members) > 0:
		return nil, kerr.NonEmptyGroup
	}
	return so, nil
}

// groupOfOtherType reports whether the coordinator holds group as a
// classic or consumer group.
func groupOfOtherType(c GroupCoordinator, group string) bool {
	return slices.ContainsFunc(c.ListGroups(nil, []string{"classic", "consumer"}), func(g kmsg.ListGroupsResponseGroup) bool {
		return g.Group == group
	})
}

// shareResetTopic resolves a topic of a reset: TOPIC_AUTHORIZATION_FAILED
// without READ on it, UNKNOWN_TOPIC_OR_PARTITION if it does not exist.
func (s *Server) shareResetTopic(ctx context.Context, byName topicByName, name string) (*TopicView, int16) {
	if !s.authorizeTopic(ctx, acl.OpRead, name) {
		return nil, kerr.TopicAuthorizationFailed.Code
	}
	if tv := byName(name); tv != nil {
		return tv, 0
	}
	return nil, kerr.UnknownTopicOrPartition.Code
}

// startAlterShareGroupOffsets answers AlterShareGroupOffsets v0: READ on
// the group and each topic; a start offset below 0 is INVALID_REQUEST.
func (s *Server) startAlterShareGroupOffsets(req *kmsg.AlterShareGroupOffsetsRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		so, err := s.shareResetCheck(ctx, req.GroupID, acl.OpRead)
		if err != nil {
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		topics := s.topics(ctx).byName
		resp.Topics = make([]kmsg.AlterShareGroupOffsetsResponseTopic, len(req.Topics))
		var resets shareResets
		for i, t := range req.Topics {
			rt := &resp.Topics[i]
			*rt = kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			tv, code := s.shareResetTopic(ctx, topics, t.Topic)
			if tv != nil {
				rt.TopicID = tv.ID
			}
			rt.Partitions = make([]kmsg.AlterShareGroupOffsetsResponseTopicPartition, len(t.Partitions))
			for j, p := range t.Partitions {
				rp := &rt.Partitions[j]
				*rp = kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				switch {
				case code != 0:
				case !slices.ContainsFunc(tv.Partitions, func(pv PartitionView) bool { return pv.Partition == p.Partition }):
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case p.StartOffset < 0:
					rp.ErrorCode = kerr.InvalidRequest.Code
				default:
					resets.add(sharepart.TopicPartition{TopicID: tv.ID, Partition: p.Partition}, p.StartOffset, &rp.ErrorCode)
				}
			}
		}
		resets.run(ctx, so, req.GroupID)
		return resp, nil
	}
}

// startDeleteShareGroupOffsets answers DeleteShareGroupOffsets v0: every
// share partition of each topic loses its state. DELETE on the group,
// READ on each topic; a topic answers the first of its partitions'
// errors.
func (s *Server) startDeleteShareGroupOffsets(req *kmsg.DeleteShareGroupOffsetsRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		so, err := s.shareResetCheck(ctx, req.GroupID, acl.OpDelete)
		if err != nil {
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		topics := s.topics(ctx).byName
		resp.Topics = make([]kmsg.DeleteShareGroupOffsetsResponseTopic, len(req.Topics))
		codes := make([][]int16, len(req.Topics))
		var resets shareResets
		for i, t := range req.Topics {
			rt := &resp.Topics[i]
			*rt = kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			tv, code := s.shareResetTopic(ctx, topics, t.Topic)
			if rt.ErrorCode = code; tv == nil {
				continue
			}
			rt.TopicID = tv.ID
			codes[i] = make([]int16, len(tv.Partitions))
			for j, pv := range tv.Partitions {
				resets.add(sharepart.TopicPartition{TopicID: tv.ID, Partition: pv.Partition}, -1, &codes[i][j])
			}
		}
		resets.run(ctx, so, req.GroupID)
		for i := range resp.Topics {
			for _, code := range codes[i] {
				if resp.Topics[i].ErrorCode == 0 {
					resp.Topics[i].ErrorCode = code
				}
			}
		}
		return resp, nil
	}
}
