package kafkaapi

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// startMetadata answers from Backend.Cluster when its turn comes, creating
// missing topics first if the backend and the request allow it. As in
// Kafka, a client sees only the topics it may DESCRIBE (a named one it may
// not answers TOPIC_AUTHORIZATION_FAILED), and auto-creation needs CREATE
// on the cluster or the topic. v13's top-level ErrorCode (KIP-1102) stays
// 0, as Kafka's brokers leave it: it would ask the client to rebootstrap.
func (s *Server) startMetadata(req *kmsg.MetadataRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		// null asks for every topic; so does an empty list in v0, which
		// has no null.
		all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
		view := s.metadataView(ctx, all)
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		fillBrokers(resp, view.ClusterView)
		defer s.fillAuthorizedOps(ctx, req, resp)
		if all {
			for i := range view.Topics {
				if s.authorizeTopic(ctx, acl.OpDescribe, view.Topics[i].Name) {
					resp.Topics = append(resp.Topics, topicMetadata(&view.Topics[i]))
				}
			}
			return resp, nil
		}

		// Topics are answered in request order, each name once.
		allowCreate := s.backend.AutoCreateTopics() && (req.Version < 4 || req.AllowAutoTopicCreation)
		var created []string // auto-created, their leaders awaited once below
		seen := make(map[string]bool, len(req.Topics))
		for _, rt := range req.Topics {
			if rt.Topic == nil { // v10+: by topic id
				t := view.byID(rt.TopicID)
				if t != nil && !s.authorizeTopic(ctx, acl.OpDescribe, t.Name) {
					resp.Topics = append(resp.Topics, topicError(nil, rt.TopicID, kerr.TopicAuthorizationFailed))
				} else if t != nil && !seen[t.Name] {
					seen[t.Name] = true
					resp.Topics = append(resp.Topics, topicMetadata(t))
				} else if t == nil {
					resp.Topics = append(resp.Topics, topicError(nil, rt.TopicID, kerr.UnknownTopicID))
				}
				continue
			}
			name := *rt.Topic
			if seen[name] {
				continue
			}
			seen[name] = true
			if !s.authorizeTopic(ctx, acl.OpDescribe, name) {
				resp.Topics = append(resp.Topics, topicError(&name, [16]byte{}, kerr.TopicAuthorizationFailed))
				continue
			}
			if t := view.byName(name); t != nil {
				resp.Topics = append(resp.Topics, topicMetadata(t))
				continue
			}
			err := s.missingTopic(ctx, name, allowCreate)
			if errors.Is(err, kerr.LeaderNotAvailable) {
				created = append(created, name)
			}
			resp.Topics = append(resp.Topics, topicError(&name, [16]byte{}, err))
		}
		if len(created) > 0 {
			// Topics created just now may have leaders after a moment; if
			// so, spare the client a retry.
			s.waitTopicLeaders(ctx, created)
			view = s.metadataView(ctx, false)
			for i := range resp.Topics {
				rt := &resp.Topics[i]
				if rt.ErrorCode != kerr.LeaderNotAvailable.Code || rt.Topic == nil {
					continue
				}
				if t := view.byName(*rt.Topic); t != nil && len(t.Partitions) > 0 {
					*rt = topicMetadata(t)
				}
			}
		}
		return resp, nil
	}
}

// metadataView is what a Metadata request reads: the brokers, and its
// topics by name or id (FindCoordinator and the leader hints read it too).
// With a LeaderLookup backend, a request that names its topics builds
// only those, not every partition's view: such a request's cost does not
// grow with the cluster.
type metadataView struct {
	ClusterView
	topicLookup
}

// topicLookup finds topics by name or id; nil if there is none.
type topicLookup struct {
	byName topicByName
	byID   func(id [16]byte) *TopicView
}

// topicByName finds a topic's view by its name; nil if there is none.
type topicByName func(name string) *TopicView

func (s *Server) metadataView(ctx context.Context, all bool) metadataView {
	if _, ok := s.backend.(LeaderLookup); all || !ok {
		v := metadataView{ClusterView: s.cluster(ctx)}
		idx := indexTopics(v.Topics)
		v.byName = func(name string) *TopicView { return idx[name] }
		v.byID = func(id [16]byte) *TopicView { return findTopicID(v.Topics, id) }
		return v
	}
	return metadataView{ClusterView: onConnListener(ctx, s.clusterBrokers()), topicLookup: s.topics(ctx)}
}

// topics is the lookup of the admin requests that name their topics and
// need no broker: a LeaderLookup backend reads each topic alone when
// asked, others give one whole Cluster view.
func (s *Server) topics(ctx context.Context) topicLookup {
	l, ok := s.backend.(LeaderLookup)
	if !ok {
		return s.metadataView(ctx, true).topicLookup
	}
	var tl topicLookup
	tl.byName = func(name string) *TopicView {
		if t, ok := l.TopicView(name); ok {
			return &t
		}
		return nil
	}
	tl.byID = func(id [16]byte) *TopicView {
		if name, ok := s.topicName(id); ok {
			return tl.byName(name)
		}
		return nil
	}
	return tl
}

// fillAuthorizedOps answers v8+'s request for the operations the client
// may perform (with no authorizer, every supported one).
func (s *Server) fillAuthorizedOps(ctx context.Context, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if req.IncludeClusterAuthorizedOperations && req.Version <= 10 {
		resp.AuthorizedOperations = s.authorizedOps(ctx, clusterOperations, acl.ResourceCluster, acl.ClusterName)
	}
	for i := range resp.Topics {
		if t := resp.Topics[i].Topic; req.IncludeTopicAuthorizedOperations && t != nil {
			resp.Topics[i].AuthorizedOperations = s.authorizedOps(ctx, topicOperations, acl.ResourceTopic, *t)
		}
	}
}

// missingTopic is the error to answer for a named topic that does not
// exist, after creating it when allowed: auto-creation needs CREATE on the
// cluster or the topic.
func (s *Server) missingTopic(ctx context.Context, name string, allowCreate bool) error {
	switch {
	case ValidateTopicName(name) != nil:
		return kerr.InvalidTopicException
	case !allowCreate:
		return kerr.UnknownTopicOrPartition
	case !s.authorizeCluster(ctx, acl.OpCreate) && !s.authorizeTopic(ctx, acl.OpCreate, name):
		return kerr.TopicAuthorizationFailed
	}
	return s.autoCreate(ctx, name)
}

// autoCreate creates a topic with the defaults and returns the error to
// answer for it: LEADER_NOT_AVAILABLE while it comes up, as Kafka does.
func (s *Server) autoCreate(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	_, err := s.backend.CreateTopic(ctx, TopicSpec{Name: name, Partitions: -1, ReplicationFactor: -1}, false)
	if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
		return kerr.LeaderNotAvailable
	}
	return err
}

func fillBrokers(resp *kmsg.MetadataResponse, view ClusterView) {
	resp.Brokers = make([]kmsg.MetadataResponseBroker, len(view.Brokers))
	for i, b := range view.Brokers {
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.NodeID, b.Host, b.Port
		if b.Rack != "" {
			rb.Rack = &b.Rack
		}
		resp.Brokers[i] = rb
	}
	if view.ClusterID != "" {
		id := view.ClusterID
		resp.ClusterID = &id
	}
	resp.ControllerID = view.ControllerID
}

func topicMetadata(t *TopicView) kmsg.MetadataResponseTopic {
	rt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	rt.Topic = &name
	rt.TopicID = t.ID
	rt.IsInternal = t.Internal
	rt.Partitions = make([]kmsg.MetadataResponseTopicPartition, len(t.Partitions))
	for i, p := range t.Partitions {
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition = p.Partition
		rp.Leader = p.Leader
		rp.LeaderEpoch = p.LeaderEpoch
		rp.Replicas = p.Replicas
		rp.ISR = p.ISR
		rp.OfflineReplicas = p.OfflineReplicas
		if p.Leader < 0 {
			rp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		rt.Partitions[i] = rp
	}
	return rt
}

func topicError(name *string, id [16]byte, err error) kmsg.MetadataResponseTopic {
	rt := kmsg.NewMetadataResponseTopic()
	rt.Topic = name
	rt.TopicID = id
	rt.ErrorCode = ErrorCode(err)
	return rt
}

// topicIndex finds a view's topics by name.
type topicIndex map[string]*TopicView

func indexTopics(topics []TopicView) topicIndex {
	idx := make(topicIndex, len(topics))
	for i := range topics {
		idx[topics[i].Name] = &topics[i]
	}
	return idx
}

func findTopicID(topics []TopicView, id [16]byte) *TopicView {
	if id == ([16]byte{}) {
		return nil
	}
	if i := slices.IndexFunc(topics, func(t TopicView) bool { return t.ID == id }); i >= 0 {
		return &topics[i]
	}
	return nil
}
