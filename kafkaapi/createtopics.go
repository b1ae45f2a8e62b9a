package kafkaapi

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors the server answers CreateTopics with before asking the backend.
var (
	errDuplicateTopic = fmt.Errorf("%w: topic named more than once in one request", kerr.InvalidRequest)
	errAssignment     = fmt.Errorf("%w: manual replica assignment is not supported", kerr.InvalidReplicaAssignment)
)

// startCreateTopics creates the topics one by one, in request order, when
// its turn comes. Topic configs are accepted and ignored. The topics of one
// request may create at most Config.MaxCreatePartitions partitions in all.
func (s *Server) startCreateTopics(req *kmsg.CreateTopicsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := s.withRequestTimeout(ctx, req.TimeoutMillis)
		defer cancel()

		count := make(map[string]int, len(req.Topics))
		for _, rt := range req.Topics {
			count[rt.Topic]++
		}
		lim := createLimits{partitions: s.cfg.MaxCreatePartitions, brokers: len(s.backend.Cluster(ctx).Brokers)}
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		resp.Topics = make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
		for i := range req.Topics {
			rt := &req.Topics[i]
			st := &resp.Topics[i]
			*st = kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			created, err := s.createTopic(ctx, rt, count[rt.Topic] > 1, req.ValidateOnly, &lim)
			if err != nil {
				st.ErrorCode = ErrorCode(err)
				st.ErrorMessage = errorMessage(err)
				continue
			}
			st.TopicID = created.ID
			st.NumPartitions = created.Partitions
			st.ReplicationFactor = created.ReplicationFactor
		}
		return resp, nil
	}
}

// createLimits is what is left of one CreateTopics request's limits.
type createLimits struct {
	partitions int // partitions the request may still create
	brokers    int // live brokers in the cluster view; 0 if none known
}

// withRequestTimeout bounds ctx by a request's own timeout, or by
// Config.RequestTimeout when it carries none (0 or less).
func (s *Server) withRequestTimeout(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	timeout := s.cfg.RequestTimeout
	if timeoutMillis > 0 {
		timeout = time.Duration(timeoutMillis) * time.Millisecond
	}
	return context.WithTimeout(ctx, timeout)
}

// createTopic checks one topic of the request and passes it to the
// backend, charging what it created (or would create) to lim.
func (s *Server) createTopic(ctx context.Context, rt *kmsg.CreateTopicsRequestTopic, duplicate, validateOnly bool, lim *createLimits) (CreatedTopic, error) {
	switch {
	case duplicate:
		return CreatedTopic{}, errDuplicateTopic
	case len(rt.ReplicaAssignment) > 0:
		return CreatedTopic{}, errAssignment
	case rt.NumPartitions == 0 || rt.NumPartitions < -1:
		return CreatedTopic{}, kerr.InvalidPartitions
	case rt.ReplicationFactor == 0 || rt.ReplicationFactor < -1:
		return CreatedTopic{}, kerr.InvalidReplicationFactor
	}
	if err := ValidateTopicName(rt.Topic); err != nil {
		return CreatedTopic{}, err
	}
	// A default count (-1) is charged once the backend has resolved it.
	if int64(rt.NumPartitions) > int64(lim.partitions) || lim.partitions < 1 {
		// Kafka's controller refuses such a request as an excessively
		// large batch operation: POLICY_VIOLATION.
		return CreatedTopic{}, fmt.Errorf("%w: %d partitions asked, %d left of the %d one request may create",
			kerr.PolicyViolation, rt.NumPartitions, max(lim.partitions, 0), s.cfg.MaxCreatePartitions)
	}
	// The backend decides on the live brokers it knows; this only spares
	// it a request the cluster view already rules out.
	if lim.brokers > 0 && int(rt.ReplicationFactor) > lim.brokers {
		return CreatedTopic{}, fmt.Errorf("%w: replication factor %d is larger than the %d live brokers",
			kerr.InvalidReplicationFactor, rt.ReplicationFactor, lim.brokers)
	}
	spec := TopicSpec{Name: rt.Topic, Partitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor}
	created, err := s.backend.CreateTopic(ctx, spec, validateOnly)
	if err == nil {
		lim.partitions -= int(created.Partitions)
	}
	return created, err
}
