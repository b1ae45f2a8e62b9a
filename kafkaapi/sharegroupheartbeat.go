package kafkaapi

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// startShareGroupHeartbeat answers ShareGroupHeartbeat v1 (KIP-932) by the
// group's coordinator: READ on the group (else GROUP_AUTHORIZATION_FAILED)
// and, as Kafka checks it, DESCRIBE on every topic the member subscribes
// to (else TOPIC_AUTHORIZATION_FAILED).
func (s *Server) startShareGroupHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, rc requestInfo) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		fail := func(err error, msg string) (kmsg.Response, error) {
			resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			resp.ErrorCode = ErrorCode(err)
			if msg != "" {
				resp.ErrorMessage = &msg
			}
			return resp, nil
		}
		c, err := s.coordinator(ctx, req.GroupID, acl.OpRead)
		if err != nil {
			return fail(err, "")
		}
		for _, t := range req.SubscribedTopicNames {
			if !s.authorizeTopic(ctx, acl.OpDescribe, t) {
				return fail(kerr.TopicAuthorizationFailed, "The group has subscribed to topics that the client is not authorized to describe.")
			}
		}
		return c.ShareGroupHeartbeat(ctx, rc.clientID, "/"+rc.host, req), nil
	}
}
