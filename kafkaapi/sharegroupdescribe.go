package kafkaapi

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// shareGroupOperations are the operations Kafka reports on a share group
// (ShareGroupDescribe with IncludeAuthorizedOperations).
var shareGroupOperations = operationBits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete)

// startShareGroupDescribe answers ShareGroupDescribe v1, each group by its
// coordinator: DESCRIBE on the group, and, as Kafka checks it, DESCRIBE on
// every topic of its members' assignments (else the group's error is
// TOPIC_AUTHORIZATION_FAILED and nothing else of it is shown).
func (s *Server) startShareGroupDescribe(req *kmsg.ShareGroupDescribeRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		for _, id := range req.GroupIDs {
			var g kmsg.ShareGroupDescribeResponseGroup
			if c, err := s.coordinator(ctx, id, acl.OpDescribe); err != nil {
				g = kmsg.NewShareGroupDescribeResponseGroup()
				g.GroupID, g.ErrorCode = id, ErrorCode(err)
			} else {
				g = c.DescribeShareGroup(id)
			}
			if g.ErrorCode == 0 && !s.shareTopicsVisible(ctx, g) {
				msg := "The group has described topic(s) that the client is not authorized to describe."
				g = kmsg.NewShareGroupDescribeResponseGroup()
				g.GroupID, g.ErrorCode, g.ErrorMessage = id, kerr.TopicAuthorizationFailed.Code, &msg
			}
			g.AuthorizedOperations = noAuthorizedOperations
			if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
				g.AuthorizedOperations = s.authorizedOps(ctx, shareGroupOperations, acl.ResourceGroup, id)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
}

// shareTopicsVisible reports whether the client may DESCRIBE every topic
// of the share group's members' assignments.
func (s *Server) shareTopicsVisible(ctx context.Context, g kmsg.ShareGroupDescribeResponseGroup) bool {
	seen := make(map[string]bool)
	for _, m := range g.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			if !seen[tp.Topic] {
				seen[tp.Topic] = true
				if !s.authorizeTopic(ctx, acl.OpDescribe, tp.Topic) {
					return false
				}
			}
		}
	}
	return true
}
