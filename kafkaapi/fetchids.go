package kafkaapi

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// TopicIDs is an optional capability of a Backend, found by type
// assertion: the name of the topic with an id, for the requests that name
// topics by id (Fetch v13+). A backend without it is searched through
// Cluster, which costs a whole view a request.
type TopicIDs interface {
	// TopicNameByID returns the name of the topic whose id is id; ok is
	// false if no topic has it. It reads local state and must not block.
	TopicNameByID(id [16]byte) (name string, ok bool)
}

// topicName resolves a topic id; the zero id names no topic.
func (s *Server) topicName(id [16]byte) (string, bool) {
	if id == ([16]byte{}) {
		return "", false
	}
	if ids, ok := s.backend.(TopicIDs); ok {
		return ids.TopicNameByID(id)
	}
	if t := findTopicID(s.backend.Cluster().Topics, id); t != nil {
		return t.Name, true
	}
	return "", false
}

// fetchTopicsByID collapses a v13+ Fetch, whose topics are named by id
// (Kafka keys its map by TopicIdPartition).
var fetchTopicsByID = requestTopics[kmsg.FetchRequestTopic, kmsg.FetchRequestTopicPartition]{
	name:      func(t *kmsg.FetchRequestTopic) string { return string(t.TopicID[:]) },
	parts:     fetchTopics.parts,
	partition: fetchTopics.partition,
}

// fetchReplicaID is the broker id a Fetch says it comes from: -1 for a
// consumer (and -2 for Kafka's debugging consumer), a broker id for a
// follower. v15 moved it into the ReplicaState tag (KIP-903).
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// fetchTopicNames resolves a pass's topics: by name before v13, by id
// from v13 ("" for an id no topic has, answered UNKNOWN_TOPIC_ID).
// Resolving on every pass lets a long poll see a topic deleted under it.
func (s *Server) fetchTopicNames(req *kmsg.FetchRequest) []string {
	names := make([]string, len(req.Topics))
	for i := range req.Topics {
		if req.Version < 13 {
			names[i] = req.Topics[i].Topic
		} else {
			names[i], _ = s.topicName(req.Topics[i].TopicID)
		}
	}
	return names
}

// topicReadError is the error every partition of a Fetch topic answers
// before its partitions are read, or nil, in KafkaApis.handleFetchRequest's
// order: a follower without CLUSTER_ACTION on the cluster is refused every
// partition; then an unknown topic id; then a consumer without READ on
// the topic.
func (s *Server) topicReadError(ctx context.Context, req *kmsg.FetchRequest, name string, follower bool) error {
	switch {
	case follower && !s.authorizeCluster(ctx, acl.OpClusterAction):
		return kerr.TopicAuthorizationFailed
	case req.Version >= 13 && name == "":
		return kerr.UnknownTopicID
	case !follower && !s.authorizeTopic(ctx, acl.OpRead, name):
		return kerr.TopicAuthorizationFailed
	}
	return nil
}

// notReplicaError is Kafka's answer to a follower fetch from a broker that
// is not among the partition's replicas (Partition.followerReplicaOrThrow):
// no node follows a partition by Fetch here, as its replicas are members
// of its Raft group, so every follower fetch that reaches the leader is
// one.
func notReplicaError(rp *kmsg.FetchRequestTopicPartition) error {
	if rp.CurrentLeaderEpoch >= 0 {
		return kerr.UnknownLeaderEpoch
	}
	return kerr.NotLeaderForPartition
}

// addCurrentLeaders fills v16+'s leader discovery (KIP-951): a partition
// answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries the
// leader and leader epoch this node knows (its replica's view first, else
// the metadata's), and the response lists that leader's endpoint on the
// connection's listener, as Kafka's KafkaApis.getCurrentLeader does.
// names are the topics' names, in resp's order.
func (s *Server) addCurrentLeaders(ctx context.Context, resp *kmsg.FetchResponse, names []string) {
	hints := leaderHints{s: s, ctx: ctx}
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			sp := &resp.Topics[ti].Partitions[pi]
			if sp.ErrorCode != kerr.NotLeaderForPartition.Code && sp.ErrorCode != kerr.FencedLeaderEpoch.Code {
				continue
			}
			leader, epoch := hints.leader(names[ti], sp.Partition)
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader, epoch
			addFetchBroker(resp, hints.brokers(), leader)
		}
	}
}

// addFetchBroker lists broker id's endpoint in resp once, if it is live.
func addFetchBroker(resp *kmsg.FetchResponse, brokers []Broker, id int32) {
	if id < 0 || slices.ContainsFunc(resp.Brokers, func(b kmsg.FetchResponseBroker) bool { return b.NodeID == id }) {
		return
	}
	i := slices.IndexFunc(brokers, func(b Broker) bool { return b.NodeID == id })
	if i < 0 {
		return
	}
	b := brokers[i]
	rb := kmsg.NewFetchResponseBroker()
	rb.NodeID, rb.Host, rb.Port = b.NodeID, b.Host, b.Port
	if b.Rack != "" {
		rack := b.Rack
		rb.Rack = &rack
	}
	resp.Brokers = append(resp.Brokers, rb)
}
