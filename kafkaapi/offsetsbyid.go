package kafkaapi

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit v10 and OffsetFetch v10 (KIP-848's last step) name topics
// by id. The coordinator keeps offsets by topic name, so ids are
// translated to names on the way in and back on the way out; an id no
// topic has is UNKNOWN_TOPIC_ID.

// topicIDIndex maps the cluster's topic ids to names and back: with a
// LeaderLookup backend one topic at a time (an OffsetCommit v10 comes
// from every KIP-848 member every few seconds), else from Cluster's view.
type topicIDIndex struct {
	name func(id [16]byte) (string, bool)
	id   func(name string) ([16]byte, bool)
}

func (s *Server) topicIDIndex(ctx context.Context) topicIDIndex {
	if l, ok := s.backend.(LeaderLookup); ok {
		return topicIDIndex{name: s.topicName, id: l.TopicIDByName}
	}
	view := s.cluster(ctx)
	byID, byName := make(map[[16]byte]string, len(view.Topics)), make(map[string][16]byte, len(view.Topics))
	for _, t := range view.Topics {
		if t.ID != ([16]byte{}) {
			byID[t.ID], byName[t.Name] = t.Name, t.ID
		}
	}
	return topicIDIndex{
		name: func(id [16]byte) (string, bool) { n, ok := byID[id]; return n, ok },
		id:   func(name string) ([16]byte, bool) { id, ok := byName[name]; return id, ok },
	}
}

// commitByID answers an OffsetCommit v10: the topics it names by id go to
// commit under their names; the unknown ids are answered at once.
func (s *Server) commitByID(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	ix := s.topicIDIndex(ctx)
	named := *req
	named.Topics = nil
	var unknown []kmsg.OffsetCommitResponseTopic
	for _, t := range req.Topics {
		name, ok := ix.name(t.TopicID)
		if !ok {
			rt := offsetCommitErrors(t, kerr.UnknownTopicID)
			rt.TopicID = t.TopicID
			unknown = append(unknown, rt)
			continue
		}
		t.Topic = name
		named.Topics = append(named.Topics, t)
	}
	resp := s.commitOffsets(ctx, &named)
	for i := range resp.Topics {
		resp.Topics[i].TopicID, _ = ix.id(resp.Topics[i].Topic)
	}
	resp.Topics = append(resp.Topics, unknown...)
	return resp
}

// fetchByID answers one group of an OffsetFetch v10 by topic ids.
func (s *Server) fetchByID(ctx context.Context, g kmsg.OffsetFetchRequestGroup, fetch func([]kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup) kmsg.OffsetFetchResponseGroup {
	ix := s.topicIDIndex(ctx)
	var topics []kmsg.OffsetFetchRequestGroupTopic
	var unknown []kmsg.OffsetFetchResponseGroupTopic
	if g.Topics != nil {
		topics = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(g.Topics))
	}
	for _, t := range g.Topics {
		name, ok := ix.name(t.TopicID)
		if !ok {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			unknown = append(unknown, rt)
			continue
		}
		t.Topic = name
		topics = append(topics, t)
	}
	out := fetch(topics)
	kept := out.Topics[:0]
	for _, t := range out.Topics {
		id, ok := ix.id(t.Topic)
		if !ok && g.Topics == nil {
			continue // a deleted topic's offsets cannot be named by id
		}
		t.TopicID = id
		kept = append(kept, t)
	}
	out.Topics = append(kept, unknown...)
	return out
}
