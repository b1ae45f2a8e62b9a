package kafkaapi

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// describedProducersLimit bounds the producers one DescribeProducers
// answers: a request naming a partition of a busy topic many times could
// otherwise make the node copy its producer table as often.
const describedProducersLimit = 1 << 20

// producerStateWait bounds how long one DescribeProducers waits for
// partitions whose producer state an apply holds (one retrying a write on
// a full disk holds it until space returns); those left answer
// REQUEST_TIMED_OUT.
const producerStateWait = 5 * time.Second

// errProducersFull answers the partitions past describedProducersLimit.
var errProducersFull = fmt.Errorf("%w: the answer already holds %d producers: ask for fewer partitions",
	kerr.InvalidRequest, describedProducersLimit)

// startDescribeProducers answers DescribeProducers v0 as Kafka's
// KafkaApis.handleDescribeProducersRequest: per topic, an invalid name,
// then READ on the topic, then its existence; per partition, the
// producers of this node's replica (leader or follower, as Kafka's
// Partition.activeProducerState answers from its local log):
// NOT_LEADER_OR_FOLLOWER where this node holds no replica.
func (s *Server) startDescribeProducers(req *kmsg.DescribeProducersRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := context.WithTimeout(ctx, producerStateWait)
		defer cancel()
		resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
		topics := s.topics(ctx)
		budget := describedProducersLimit
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			var topicErr error
			switch {
			case ValidateTopicName(t.Topic) != nil:
				topicErr = kerr.InvalidTopicException
			case !s.authorizeTopic(ctx, acl.OpRead, t.Topic):
				topicErr = kerr.TopicAuthorizationFailed
			case topics.byName(t.Topic) == nil:
				topicErr = kerr.UnknownTopicOrPartition
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition = p
				err := topicErr
				if err == nil {
					rp.ActiveProducers, err = s.activeProducers(ctx, t.Topic, p, &budget)
				}
				if err != nil {
					rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), errorMessage(err)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
}

// activeProducers is one partition's answer, charged to budget.
func (s *Server) activeProducers(ctx context.Context, topic string, partition int32, budget *int) ([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, error) {
	p, err := s.backend.Partition(topic, partition)
	if err != nil {
		return nil, err
	}
	ps, ok := p.(ProducerStates)
	if !ok {
		return nil, kerr.NotLeaderForPartition
	}
	producers, err := ps.ActiveProducers(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: the partition's producer state is busy (%w)", kerr.RequestTimedOut, err)
	}
	if len(producers) > *budget {
		return nil, errProducersFull
	}
	*budget -= len(producers)
	out := make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, len(producers))
	for i, a := range producers {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = a.ProducerID, int32(a.ProducerEpoch), a.LastSequence
		ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = a.LastTimestamp, a.CoordinatorEpoch, a.TxnStartOffset
		out[i] = ap
	}
	return out, nil
}
