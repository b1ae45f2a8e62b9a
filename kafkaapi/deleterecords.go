package kafkaapi

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// deleteToHighWatermark is the DeleteRecords offset that means "up to the
// high watermark".
const deleteToHighWatermark = -1

// startDeleteRecords answers DeleteRecords 0-2 when its turn comes: each
// partition's leader moves its log start offset through Raft, one
// partition after another, within the request's timeout. A topic the
// client may not DELETE answers TOPIC_AUTHORIZATION_FAILED.
func (s *Server) startDeleteRecords(req *kmsg.DeleteRecordsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := s.withRequestTimeout(ctx, req.TimeoutMillis)
		defer cancel()
		resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewDeleteRecordsResponseTopic()
			st.Topic = rt.Topic
			deletable := s.authorizeTopic(ctx, acl.OpDelete, rt.Topic)
			for _, rp := range rt.Partitions {
				sp := kmsg.NewDeleteRecordsResponseTopicPartition()
				sp.Partition, sp.LowWatermark = rp.Partition, -1
				low, err := int64(-1), error(kerr.TopicAuthorizationFailed)
				if deletable {
					low, err = s.deleteRecords(ctx, rt.Topic, rp.Partition, rp.Offset)
				}
				if err != nil {
					sp.ErrorCode = ErrorCode(err)
				} else {
					sp.LowWatermark = low
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
}

// deleteRecords serves one partition of a DeleteRecords: the partition
// and its leader, then the offset, then the partition's own refusals (an
// internal topic, a cleanup.policy without delete).
func (s *Server) deleteRecords(ctx context.Context, topic string, partition int32, offset int64) (int64, error) {
	if err := ValidateTopicName(topic); err != nil {
		return 0, kerr.UnknownTopicOrPartition
	}
	p, _, err := s.leader(topic, partition, -1)
	if err != nil {
		return 0, err
	}
	if err := p.Settle(ctx); err != nil {
		return 0, err
	}
	if offset == deleteToHighWatermark {
		offset = p.HighWatermark()
	}
	if offset < 0 || offset > p.HighWatermark() {
		return 0, fmt.Errorf("%w: offset %d is not in [0, high watermark %d]", kerr.OffsetOutOfRange, offset, p.HighWatermark())
	}
	return p.DeleteRecords(ctx, offset)
}
