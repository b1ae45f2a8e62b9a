package kafkaapi

import (
	"context"
	"slices"
)

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
	// TopicNames are Cluster's topics' names, sorted.
	TopicNames() []string
}

// clusterBrokers is Cluster without its topics: a LeaderLookup backend
// builds no partition's view for it.
func (s *Server) clusterBrokers() ClusterView {
	if l, ok := s.backend.(LeaderLookup); ok {
		return l.ClusterBrokers()
	}
	return s.backend.Cluster()
}

// topicNames are every topic's names, sorted: a LeaderLookup backend
// builds no partition's view for them.
func (s *Server) topicNames() []string {
	if l, ok := s.backend.(LeaderLookup); ok {
		return l.TopicNames()
	}
	var names []string
	for _, tv := range s.backend.Cluster().Topics {
		names = append(names, tv.Name)
	}
	slices.Sort(names)
	return names
}

// leaderHints answers partitions' leaders and the brokers for one
// response's hints, reading the backend once on first need: a
// LeaderLookup asks for each partition alone, other backends read
// metadataView's topics.
type leaderHints struct {
	s    *Server
	ctx  context.Context
	read bool
	view metadataView
}

func (h *leaderHints) load() {
	if !h.read {
		h.read, h.view = true, h.s.metadataView(h.ctx, false)
	}
}

// leader is topic/p's leader and leader epoch, -1 and -1 if unknown.
func (h *leaderHints) leader(topic string, p int32) (int32, int32) {
	if l, ok := h.s.backend.(LeaderLookup); ok {
		leader, epoch, _ := l.PartitionLeader(topic, p)
		return leader, epoch
	}
	h.load()
	if t := h.view.byName(topic); t != nil {
		for _, pv := range t.Partitions {
			if pv.Partition == p {
				return pv.Leader, pv.LeaderEpoch
			}
		}
	}
	return -1, -1
}

// brokers are the live brokers on the connection's listener.
func (h *leaderHints) brokers() []Broker {
	h.load()
	return h.view.Brokers
}
