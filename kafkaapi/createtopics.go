package kafkaapi

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/internal/quota"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// Errors the server answers CreateTopics with before asking the backend.
var (
	errDuplicateTopic = fmt.Errorf("%w: topic named more than once in one request", kerr.InvalidRequest)
	errAssignment     = fmt.Errorf("%w: manual replica assignment is not supported", kerr.InvalidReplicaAssignment)
)

// startCreateTopics creates the topics one by one, in request order, when
// its turn comes. Topic configs are validated (INVALID_CONFIG) and stored
// with the topic; v5+ answers every config of the created topic with its
// value and source. The topics of one request may create at most
// Config.MaxCreatePartitions partitions in all. The partitions created
// are charged to mq, the client's controller-mutation quota (nil: none).
func (s *Server) startCreateTopics(req *kmsg.CreateTopicsRequest, mq *quota.Mutation) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := s.withRequestTimeout(ctx, req.TimeoutMillis)
		defer cancel()

		count := make(map[string]int, len(req.Topics))
		for _, rt := range req.Topics {
			count[rt.Topic]++
		}
		lim := createLimits{partitions: s.cfg.MaxCreatePartitions, brokers: len(s.clusterBrokers().Brokers), quota: mq}
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		resp.Topics = make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
		clusterCreate := s.authorizeCluster(ctx, acl.OpCreate)
		var made []string // created, their leaders awaited below
		for i := range req.Topics {
			rt := &req.Topics[i]
			st := &resp.Topics[i]
			*st = kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			var created CreatedTopic
			err := error(kerr.TopicAuthorizationFailed) // CREATE on the cluster or the topic
			if clusterCreate || s.authorizeTopic(ctx, acl.OpCreate, rt.Topic) {
				created, err = s.createTopic(ctx, rt, count[rt.Topic] > 1, req.ValidateOnly, &lim)
			}
			if err != nil {
				st.ErrorCode = ErrorCode(err)
				st.ErrorMessage = errorMessage(err)
				continue
			}
			if !req.ValidateOnly {
				made = append(made, rt.Topic)
			}
			st.TopicID = created.ID
			st.NumPartitions = created.Partitions
			st.ReplicationFactor = created.ReplicationFactor
			if req.Version >= 5 {
				// As Kafka: the configs only for a client that may
				// DESCRIBE_CONFIGS the topic.
				if s.authorizeTopic(ctx, acl.OpDescribeConfigs, rt.Topic) {
					st.Configs = s.createdConfigs(created.Configs)
				} else {
					st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
				}
			}
		}
		s.waitTopicLeaders(ctx, made)
		return resp, nil
	}
}

// TopicLeaders is a Backend whose CreateTopic and CreatePartitions return
// once the change is committed, without waiting for the new partitions'
// first leaders: the server waits once for every topic a request created
// or grew, so that their elections overlap (a request of a hundred topics
// took a hundred elections in turn).
type TopicLeaders interface {
	// WaitTopicLeaders returns once every partition of the topics has a
	// leader, or after the backend's bound, or when ctx ends.
	WaitTopicLeaders(ctx context.Context, topics []string)
}

// waitTopicLeaders waits for the new topics' leaders with a TopicLeaders
// backend, so that the client's next Metadata finds them usable.
func (s *Server) waitTopicLeaders(ctx context.Context, topics []string) {
	if w, ok := s.backend.(TopicLeaders); ok && len(topics) > 0 {
		w.WaitTopicLeaders(ctx, topics)
	}
}

// createLimits is what is left of one CreateTopics request's limits.
type createLimits struct {
	partitions int // partitions the request may still create
	brokers    int // live brokers in the cluster view; 0 if none known
	// quota is the client's controller-mutation quota (nil: none).
	quota *quota.Mutation
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
	configs, err := requestConfigs(rt.Configs)
	if err != nil {
		return CreatedTopic{}, err
	}
	// A default count (-1) is charged once the backend has resolved it.
	if int64(rt.NumPartitions) > int64(lim.partitions) || lim.partitions < 1 {
		// Kafka's controller refuses such a request as an excessively
		// large batch operation: POLICY_VIOLATION.
		return CreatedTopic{}, fmt.Errorf("%w: %d partitions asked; one CreateTopics request may create at most %d in all (%d left in this one)",
			kerr.PolicyViolation, rt.NumPartitions, s.cfg.MaxCreatePartitions, max(lim.partitions, 0))
	}
	// The backend decides on the live brokers it knows; this only spares
	// it a request the cluster view already rules out.
	if lim.brokers > 0 && int(rt.ReplicationFactor) > lim.brokers {
		return CreatedTopic{}, fmt.Errorf("%w: replication factor %d is larger than the %d live brokers",
			kerr.InvalidReplicationFactor, rt.ReplicationFactor, lim.brokers)
	}
	if err := lim.quota.Check(); err != nil {
		return CreatedTopic{}, kerr.ThrottlingQuotaExceeded
	}
	spec := TopicSpec{Name: rt.Topic, Partitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor, Configs: configs}
	created, err := s.backend.CreateTopic(ctx, spec, validateOnly)
	if err == nil {
		lim.partitions -= int(created.Partitions)
		created.Configs = configs
		if !validateOnly {
			lim.quota.Record(int(created.Partitions))
		}
	}
	return created, err
}

// requestConfigs checks a CreateTopics topic's configs, as Kafka does:
// no null values, no name twice, each one valid (INVALID_CONFIG).
func requestConfigs(rcs []kmsg.CreateTopicsRequestTopicConfig) (map[string]string, error) {
	if len(rcs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(rcs))
	for _, c := range rcs {
		if c.Value == nil {
			return nil, fmt.Errorf("%w: null value not supported for topic configs: %s", kerr.InvalidConfig, c.Name)
		}
		if _, dup := m[c.Name]; dup {
			return nil, fmt.Errorf("%w: duplicate config key %s", kerr.InvalidRequest, c.Name)
		}
		m[c.Name] = *c.Value
	}
	return m, topicconfig.ValidateAll(m)
}

// createdConfigs answers CreateTopics v5+: every topic config of a new
// topic with its overrides, with its value and source.
func (s *Server) createdConfigs(overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	described := describeTopic(overrides, s.backend.ClusterConfigs(), s.staticConfigs())
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(described))
	for _, dc := range described {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = dc.name, kmsg.StringPtr(dc.value), int8(kmsg.ConfigSourceDefaultConfig)
		if len(dc.synonyms) > 0 {
			c.Source = int8(dc.synonyms[0].Source)
		}
		out = append(out, c)
	}
	return out
}
