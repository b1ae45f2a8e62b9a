package kafkaapi

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicNamer is an optional capability of a Backend, found by type
// assertion: the name of the topic with an id, for requests that name
// topics by id (Produce v13). It reads local state and must not block. A
// backend without it is looked up in Cluster.
type TopicNamer interface {
	TopicName(id [16]byte) (string, bool)
}

// unknownTopicIDPrefix starts the name a Produce topic with an unknown id
// is given until it is answered: '<' is in no topic name, so it names no
// topic, and the id keeps two unknown ids apart.
const unknownTopicIDPrefix = "<unknown topic id "

// nameTopicsByID gives each topic of a Produce v13 the name of its id,
// or, for an id no topic has, a name that checkProduce answers
// UNKNOWN_TOPIC_ID.
func (s *Server) nameTopicsByID(req *kmsg.ProduceRequest) {
	if req.Version < 13 {
		return
	}
	namer, ok := s.backend.(TopicNamer)
	var view *ClusterView
	for i := range req.Topics {
		t := &req.Topics[i]
		var name string
		var found bool
		if ok {
			name, found = namer.TopicName(t.TopicID)
		} else {
			if view == nil {
				v := s.backend.Cluster()
				view = &v
			}
			if j := slices.IndexFunc(view.Topics, func(tv TopicView) bool { return tv.ID == t.TopicID }); j >= 0 {
				name, found = view.Topics[j].Name, true
			}
		}
		if !found || t.TopicID == [16]byte{} {
			name = unknownTopicIDPrefix + hex.EncodeToString(t.TopicID[:]) + ">"
		}
		t.Topic = name
	}
}

// errUnknownTopicID answers a Produce v13 topic whose id names no topic.
var errUnknownTopicID = fmt.Errorf("%w: no topic has this id", kerr.UnknownTopicID)

// unknownTopicID reports whether nameTopicsByID found no topic for name.
func unknownTopicID(name string) bool {
	return len(name) > len(unknownTopicIDPrefix) && name[:len(unknownTopicIDPrefix)] == unknownTopicIDPrefix
}

// addLeaderHints fills, from Produce v10 (KIP-951), the current leader of
// each partition answered NOT_LEADER_OR_FOLLOWER and the endpoints of
// those leaders, as this node knows them, so the client need not ask for
// metadata first.
func (s *Server) addLeaderHints(ctx context.Context, resp *kmsg.ProduceResponse) {
	if resp.Version < 10 {
		return
	}
	hints := leaderHints{s: s, ctx: ctx}
	var leaders []int32
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			leader, epoch := hints.leader(rt.Topic, rp.Partition)
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
			if leader >= 0 && !slices.Contains(leaders, leader) {
				leaders = append(leaders, leader)
			}
		}
	}
	slices.Sort(leaders)
	for _, id := range leaders {
		brokers := hints.brokers()
		i := slices.IndexFunc(brokers, func(b Broker) bool { return b.NodeID == id })
		if i < 0 {
			continue
		}
		b := brokers[i]
		nb := kmsg.NewProduceResponseBroker()
		nb.NodeID, nb.Host, nb.Port = b.NodeID, b.Host, b.Port
		if b.Rack != "" {
			nb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, nb)
	}
}
