package kafkaapi

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// The KIP-848 consumer group APIs: ConsumerGroupHeartbeat and
// ConsumerGroupDescribe, routed to the group's coordinator like the
// classic group APIs.

// startConsumerGroupHeartbeat answers ConsumerGroupHeartbeat v0-1: READ on
// the group, and, as Kafka checks it, DESCRIBE on every topic the member
// subscribes to by name (else TOPIC_AUTHORIZATION_FAILED); a regex
// subscription gets only the topics the member may DESCRIBE.
func (s *Server) startConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, rc requestInfo) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		fail := func(err error) (kmsg.Response, error) {
			resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		c, err := s.coordinator(ctx, req.Group, acl.OpRead)
		if err != nil {
			return fail(err)
		}
		for _, t := range req.SubscribedTopicNames {
			if !s.authorizeTopic(ctx, acl.OpDescribe, t) {
				return fail(kerr.TopicAuthorizationFailed)
			}
		}
		canDescribe := func(topic string) bool { return s.authorizeTopic(ctx, acl.OpDescribe, topic) }
		return c.ConsumerGroupHeartbeat(ctx, rc.clientID, "/"+rc.host, canDescribe, req), nil
	}
}

// consumerGroupOperations are the operations Kafka reports on a consumer
// group (ConsumerGroupDescribe with IncludeAuthorizedOperations).
var consumerGroupOperations = operationBits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete)

// startConsumerGroupDescribe answers ConsumerGroupDescribe v0-1, each
// group by its coordinator: DESCRIBE on the group, and, as Kafka checks
// it, DESCRIBE on every topic of its members' assignments (else the
// group's error is TOPIC_AUTHORIZATION_FAILED).
func (s *Server) startConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, id := range req.Groups {
			var g kmsg.ConsumerGroupDescribeResponseGroup
			if c, err := s.coordinator(ctx, id, acl.OpDescribe); err != nil {
				g = kmsg.NewConsumerGroupDescribeResponseGroup()
				g.Group, g.ErrorCode = id, ErrorCode(err)
			} else {
				g = c.DescribeConsumerGroup(id)
			}
			if g.ErrorCode == 0 && !s.assignedTopicsVisible(ctx, g) {
				msg := "The group has described topic(s) that the client is not authorized to describe."
				g = kmsg.NewConsumerGroupDescribeResponseGroup()
				g.Group, g.ErrorCode, g.ErrorMessage = id, kerr.TopicAuthorizationFailed.Code, &msg
			}
			g.AuthorizedOperations = noAuthorizedOperations
			if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
				g.AuthorizedOperations = s.authorizedOps(ctx, consumerGroupOperations, acl.ResourceGroup, id)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
}

// assignedTopicsVisible reports whether the client may DESCRIBE every
// topic of the group's members' assignments.
func (s *Server) assignedTopicsVisible(ctx context.Context, g kmsg.ConsumerGroupDescribeResponseGroup) bool {
	seen := make(map[string]bool)
	for _, m := range g.Members {
		for _, a := range [2]kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if seen[tp.Topic] {
					continue
				}
				seen[tp.Topic] = true
				if !s.authorizeTopic(ctx, acl.OpDescribe, tp.Topic) {
					return false
				}
			}
		}
	}
	return true
}
