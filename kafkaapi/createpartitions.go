package kafkaapi

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/internal/quota"
)

// startCreatePartitions grows the topics one by one, in request order,
// when its turn comes (CreatePartitions 0-3). As with CreateTopics, a
// topic named twice gets INVALID_REQUEST and a manual assignment
// INVALID_REPLICA_ASSIGNMENT, and one the client may not ALTER
// TOPIC_AUTHORIZATION_FAILED; the backend places the new replicas. The
// partitions added are charged to mq, the client's controller-mutation
// quota (nil: none); once it is exceeded, a strict one refuses the next
// topics with THROTTLING_QUOTA_EXCEEDED.
func (s *Server) startCreatePartitions(req *kmsg.CreatePartitionsRequest, mq *quota.Mutation) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := s.withRequestTimeout(ctx, req.TimeoutMillis)
		defer cancel()
		count := make(map[string]int, len(req.Topics))
		for _, rt := range req.Topics {
			count[rt.Topic]++
		}
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		topics := s.topics(ctx)
		var grown []string // their new leaders awaited below
		for _, rt := range req.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = rt.Topic
			var err error
			switch {
			case count[rt.Topic] > 1:
				err = errDuplicateTopic
			case !s.authorizeTopic(ctx, acl.OpAlter, rt.Topic):
				err = kerr.TopicAuthorizationFailed
			case len(rt.Assignment) > 0:
				err = errAssignment
			case mq.Check() != nil:
				err = kerr.ThrottlingQuotaExceeded
			default:
				before := partitionCount(topics.byName, rt.Topic)
				err = s.backend.CreatePartitions(ctx, rt.Topic, rt.Count, req.ValidateOnly)
				if err == nil && !req.ValidateOnly {
					mq.Record(int(rt.Count) - before)
					grown = append(grown, rt.Topic)
				}
			}
			if err != nil {
				st.ErrorCode, st.ErrorMessage = ErrorCode(err), errorMessage(err)
			}
			resp.Topics = append(resp.Topics, st)
		}
		s.waitTopicLeaders(ctx, grown)
		return resp, nil
	}
}
