package kafkaapi

import "context"

// LeaderLookup is a Backend that finds one partition's leader, and the
// brokers, without building every partition's view as Cluster does. The
// requests that name a coordinator or answer a partition's leader
// (FindCoordinator, the leader hints of Produce and Fetch errors) use it
// when the backend has it: their cost then does not grow with the
// cluster's partitions, which a leadership change answers in bulk. A
// Metadata request that names its topics reads only those.
type LeaderLookup interface {
	// PartitionLeader is topic/p's leader and leader epoch as Cluster
	// shows them; ok is false while it has no live leader.
	PartitionLeader(topic string, p int32) (leader, epoch int32, ok bool)
	// ClusterBrokers is Cluster without its topics.
	ClusterBrokers() ClusterView
	// TopicView is one topic of Cluster's view.
	TopicView(name string) (TopicView, bool)
	// TopicIDByName is a topic's id; ok is false if no topic has the name.
	TopicIDByName(name string) (id [16]byte, ok bool)
}

// brokersView is s.cluster's brokers (Topics may be nil or not).
func (s *Server) brokersView(ctx context.Context) ClusterView {
	if l, ok := s.backend.(LeaderLookup); ok {
		return onConnListener(ctx, l.ClusterBrokers())
	}
	return s.cluster(ctx)
}

// leaderHints answers partitions' leaders and the brokers for one
// response's hints, reading the backend once on first need.
type leaderHints struct {
	s      *Server
	ctx    context.Context
	read   bool
	view   ClusterView
	topics topicIndex // without a LeaderLookup
}

func (h *leaderHints) load() {
	if h.read {
		return
	}
	h.read = true
	if _, ok := h.s.backend.(LeaderLookup); ok {
		h.view = h.s.brokersView(h.ctx)
		return
	}
	h.view = h.s.cluster(h.ctx)
	h.topics = indexTopics(h.view.Topics)
}

// leader is topic/p's leader and leader epoch, -1 and -1 if unknown.
func (h *leaderHints) leader(topic string, p int32) (int32, int32) {
	h.load()
	if l, ok := h.s.backend.(LeaderLookup); ok {
		leader, epoch, _ := l.PartitionLeader(topic, p)
		return leader, epoch
	}
	t := h.topics[topic]
	if t == nil {
		return -1, -1
	}
	for _, pv := range t.Partitions {
		if pv.Partition == p {
			return pv.Leader, pv.LeaderEpoch
		}
	}
	return -1, -1
}

// brokers are the live brokers on the connection's listener.
func (h *leaderHints) brokers() []Broker {
	h.load()
	return h.view.Brokers
}
