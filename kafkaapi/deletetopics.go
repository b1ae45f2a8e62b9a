package kafkaapi

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/internal/quota"
)

// startDeleteTopics deletes the topics one by one, in request order, when
// its turn comes (DeleteTopics 0-6: by name, and from v6 by name or id).
// A topic named twice gets INVALID_REQUEST; an id no topic has,
// UNKNOWN_TOPIC_ID. The partitions deleted are charged to mq, the
// client's controller-mutation quota (nil: none); once it is exceeded, a
// strict one refuses the next topics with THROTTLING_QUOTA_EXCEEDED.
func (s *Server) startDeleteTopics(req *kmsg.DeleteTopicsRequest, mq *quota.Mutation) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := s.withRequestTimeout(ctx, req.TimeoutMillis)
		defer cancel()
		topics := req.Topics
		if req.Version < 6 {
			topics = nil
			for _, name := range req.TopicNames {
				topics = append(topics, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)})
			}
		}
		lookup := s.topics(ctx)
		names := make([]string, len(topics))
		count := map[string]int{}
		for i, t := range topics {
			names[i] = resolveTopic(lookup, t)
			count[names[i]]++
		}
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for i, t := range topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			var err error
			switch name := names[i]; {
			case name == "" && t.Topic == nil:
				err = fmt.Errorf("%w: no topic has id %x", kerr.UnknownTopicID, t.TopicID)
			case count[name] > 1:
				err = errDuplicateTopic
			case !s.authorizeTopic(ctx, acl.OpDescribe, name):
				err = kerr.UnknownTopicOrPartition // as Kafka: a topic one may not see does not exist
			case !s.authorizeTopic(ctx, acl.OpDelete, name):
				err = kerr.TopicAuthorizationFailed
			case mq.Check() != nil:
				err = kerr.ThrottlingQuotaExceeded
			default:
				rt.Topic = kmsg.StringPtr(name)
				tv := lookup.byName(name) // read before the topic is gone
				if rt.TopicID == [16]byte{} && tv != nil {
					rt.TopicID = tv.ID
				}
				err = s.backend.DeleteTopic(ctx, name)
				if err == nil && tv != nil {
					mq.Record(len(tv.Partitions))
				}
			}
			if err != nil {
				rt.ErrorCode, rt.ErrorMessage = ErrorCode(err), errorMessage(err)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
}

// resolveTopic is the name a DeleteTopics entry names: its name, or the
// name of the topic with its id ("" if none).
func resolveTopic(topics topicLookup, t kmsg.DeleteTopicsRequestTopic) string {
	if t.Topic != nil {
		return *t.Topic
	}
	if v := topics.byID(t.TopicID); v != nil {
		return v.Name
	}
	return ""
}

// partitionCount is the number of partitions of the named topic; 0 if
// unknown.
func partitionCount(byName topicByName, name string) int {
	if v := byName(name); v != nil {
		return len(v.Partitions)
	}
	return 0
}
