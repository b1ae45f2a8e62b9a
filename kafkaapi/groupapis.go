package kafkaapi

import (
	"context"
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// The group APIs. Each request of one group goes to that group's
// coordinator when its turn comes; a request the node cannot route is
// answered with the routing error (NOT_COORDINATOR and the like), which
// sends the client back to FindCoordinator. Requests of one connection are
// answered in order, so a JoinGroup waiting for its rebalance holds up the
// requests behind it, as in Kafka, which reads no further request of a
// connection until it has answered the current one.

// groupOperations are the operations Kafka reports on a group without an
// authorizer (DescribeGroups v3+ with IncludeAuthorizedOperations).
var groupOperations = operationBits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete)

// noAuthorizedOperations is Kafka's value of AuthorizedOperations when the
// client did not ask for them.
const noAuthorizedOperations = math.MinInt32

func (s *Server) startJoinGroup(req *kmsg.JoinGroupRequest, rc requestInfo) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		c, err := s.coordinator(ctx, req.Group, acl.OpRead)
		if err != nil {
			resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.Generation, resp.MemberID = ErrorCode(err), -1, req.MemberID
			return resp, nil
		}
		return c.JoinGroup(ctx, rc.clientID, "/"+rc.host, req), nil
	}
}

func (s *Server) startSyncGroup(req *kmsg.SyncGroupRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		c, err := s.coordinator(ctx, req.Group, acl.OpRead)
		if err != nil {
			resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		return c.SyncGroup(ctx, req), nil
	}
}

func (s *Server) startHeartbeat(req *kmsg.HeartbeatRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		c, err := s.coordinator(ctx, req.Group, acl.OpRead)
		if err != nil {
			resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		return c.Heartbeat(req), nil
	}
}

func (s *Server) startLeaveGroup(req *kmsg.LeaveGroupRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		c, err := s.coordinator(ctx, req.Group, acl.OpRead)
		if err != nil {
			resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		return c.LeaveGroup(req), nil
	}
}

// startOffsetCommit answers OffsetCommit 0-10 (v10 names topics by id);
// a routing error is every partition's error, as Kafka answers it.
func (s *Server) startOffsetCommit(req *kmsg.OffsetCommitRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		if req.Version >= 10 {
			return s.commitByID(ctx, req), nil
		}
		return s.commitOffsets(ctx, req), nil
	}
}

// commitOffsets answers an OffsetCommit whose topics are named.
func (s *Server) commitOffsets(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	c, err := s.coordinator(ctx, req.Group, acl.OpRead)
	if err == nil {
		allowed, denied := splitTopics(s, ctx, acl.OpRead, req.Topics, func(t kmsg.OffsetCommitRequestTopic) string { return t.Topic })
		if len(denied) == 0 {
			return c.OffsetCommit(ctx, req)
		}
		cp := *req
		cp.Topics = allowed
		resp := c.OffsetCommit(ctx, &cp)
		for _, t := range denied {
			resp.Topics = append(resp.Topics, offsetCommitErrors(t, kerr.TopicAuthorizationFailed))
		}
		return resp
	}
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		resp.Topics = append(resp.Topics, offsetCommitErrors(t, err))
	}
	return resp
}

// offsetCommitErrors answers every partition of t with err.
func offsetCommitErrors(t kmsg.OffsetCommitRequestTopic, err error) kmsg.OffsetCommitResponseTopic {
	rt := kmsg.NewOffsetCommitResponseTopic()
	rt.Topic = t.Topic
	for _, p := range t.Partitions {
		rp := kmsg.NewOffsetCommitResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.Partition, ErrorCode(err)
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// splitTopics splits a request's topics into those the client may do op
// on and the others, each in request order.
func splitTopics[T any](s *Server, ctx context.Context, op acl.Operation, topics []T, name func(T) string) (allowed, denied []T) {
	for _, t := range topics {
		if s.authorizeTopic(ctx, op, name(t)) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	return allowed, denied
}

func (s *Server) startOffsetDelete(req *kmsg.OffsetDeleteRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		c, err := s.coordinator(ctx, req.Group, acl.OpDelete)
		if err != nil {
			resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		allowed, denied := splitTopics(s, ctx, acl.OpRead, req.Topics, func(t kmsg.OffsetDeleteRequestTopic) string { return t.Topic })
		if len(denied) == 0 {
			return c.OffsetDelete(ctx, req), nil
		}
		cp := *req
		cp.Topics = allowed
		resp := c.OffsetDelete(ctx, &cp)
		for _, t := range denied { // as Kafka: READ on each topic
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
}

// startOffsetFetch answers OffsetFetch 0-10 (v10 names topics by id): one group up to v7, a batch of
// groups from v8 (KIP-709).
func (s *Server) startOffsetFetch(req *kmsg.OffsetFetchRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		if req.Version >= 8 {
			for _, g := range req.Groups {
				memberID, epoch := (*string)(nil), int32(-1)
				if req.Version >= 9 {
					memberID, epoch = g.MemberID, g.MemberEpoch
				}
				fetch := func(topics []kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup {
					return s.fetchOffsets(ctx, g.Group, topics, req.RequireStable, memberID, epoch)
				}
				if req.Version >= 10 {
					resp.Groups = append(resp.Groups, s.fetchByID(ctx, g, fetch))
				} else {
					resp.Groups = append(resp.Groups, fetch(g.Topics))
				}
			}
			return resp, nil
		}
		var topics []kmsg.OffsetFetchRequestGroupTopic
		if req.Topics != nil || req.Version < 2 { // null means all topics from v2 on
			topics = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(req.Topics))
			for _, t := range req.Topics {
				topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
			}
		}
		g := s.fetchOffsets(ctx, req.Group, topics, req.RequireStable, nil, -1)
		resp.ErrorCode = g.ErrorCode
		for _, t := range g.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p.Partition, p.Offset, p.LeaderEpoch
				rp.Metadata, rp.ErrorCode = p.Metadata, p.ErrorCode
				if req.Version < 2 && rp.ErrorCode == 0 {
					rp.ErrorCode = g.ErrorCode // v0-1 have no group-level error
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
}

// fetchOffsets answers one group of an OffsetFetch. A routing error, or a
// consumer group member's (v9: memberID and memberEpoch), is the group's
// error; v0-1 clients see it on every partition they asked for.
func (s *Server) fetchOffsets(ctx context.Context, group string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool, memberID *string, memberEpoch int32) kmsg.OffsetFetchResponseGroup {
	c, err := s.coordinator(ctx, group, acl.OpDescribe)
	if err == nil {
		if merr := c.ValidateOffsetFetch(group, memberID, memberEpoch); merr != nil {
			err = merr
		} else {
			return s.hideTopics(ctx, c.FetchOffsets(group, topics, requireStable), topics == nil)
		}
	}
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group, g.ErrorCode = group, ErrorCode(err)
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset = p, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		g.Topics = append(g.Topics, rt)
	}
	return g
}

// hideTopics applies Kafka's topic checks to an OffsetFetch answer: of
// all topics (all), those the client may not DESCRIBE are left out; named
// ones answer TOPIC_AUTHORIZATION_FAILED.
func (s *Server) hideTopics(ctx context.Context, g kmsg.OffsetFetchResponseGroup, all bool) kmsg.OffsetFetchResponseGroup {
	kept := g.Topics[:0]
	for _, t := range g.Topics {
		if s.authorizeTopic(ctx, acl.OpDescribe, t.Topic) {
			kept = append(kept, t)
			continue
		}
		if all {
			continue
		}
		for i := range t.Partitions {
			p := &t.Partitions[i]
			p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
		}
		kept = append(kept, t)
	}
	g.Topics = kept
	return g
}

// startListGroups answers ListGroups 0-5 with the groups of every
// coordinator on this node (all with DESCRIBE on the cluster, else those
// the client may DESCRIBE), as a Kafka broker does (clients ask every
// broker). While a coordinator is loading, the groups of the others come
// with COORDINATOR_LOAD_IN_PROGRESS.
func (s *Server) startListGroups(req *kmsg.ListGroupsRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		coords, err := s.backend.GroupCoordinators()
		if err != nil && !errors.Is(err, kerr.CoordinatorLoadInProgress) {
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		resp.ErrorCode = ErrorCode(err)
		all := s.authorizeCluster(ctx, acl.OpDescribe)
		for _, c := range coords {
			for _, g := range c.ListGroups(req.StatesFilter, req.TypesFilter) {
				if all || s.authorizeGroup(ctx, acl.OpDescribe, g.Group) {
					resp.Groups = append(resp.Groups, g)
				}
			}
		}
		return resp, nil
	}
}

// startDeleteGroups answers DeleteGroups 0-2, each group by its
// coordinator.
func (s *Server) startDeleteGroups(req *kmsg.DeleteGroupsRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for _, id := range req.Groups {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group = id
			c, err := s.coordinator(ctx, id, acl.OpDelete)
			if err == nil {
				if derr := c.DeleteGroup(ctx, id); derr != nil {
					err = derr
				}
			}
			g.ErrorCode = ErrorCode(err)
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
}
