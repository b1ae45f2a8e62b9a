package kafkaapi

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/sharepart"
)

// startDescribeShareGroupOffsets answers DescribeShareGroupOffsets v0-1
// from the share partitions' persisted state: each partition's start
// offset (SPSO; -1 for one with no state) and the leader epoch that wrote
// it; the lag is not computed (-1). DESCRIBE on the group, and on each
// topic (else TOPIC_AUTHORIZATION_FAILED); with no topics named, every
// topic the client may DESCRIBE, and only its partitions that have
// state. The group's membership is not consulted: a group nobody used
// has no offsets rather than GROUP_ID_NOT_FOUND.
func (s *Server) startDescribeShareGroupOffsets(req *kmsg.DescribeShareGroupOffsetsRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		so, _ := s.backend.(ShareOffsets)
		view := s.cluster(ctx)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID = g.GroupID
			switch {
			case so == nil:
				rg.ErrorCode = kerr.UnsupportedVersion.Code
			case !s.authorizeGroup(ctx, acl.OpDescribe, g.GroupID):
				rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			default:
				rg.Topics = s.describeShareOffsets(ctx, so, view, g)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
}

// describeShareOffsets answers one group's topics.
func (s *Server) describeShareOffsets(ctx context.Context, so ShareOffsets, view ClusterView, g kmsg.DescribeShareGroupOffsetsRequestGroup) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	all := g.Topics == nil
	if all {
		for _, t := range view.Topics {
			if !t.Internal && s.authorizeTopic(ctx, acl.OpDescribe, t.Name) {
				rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
				rt.Topic = t.Name
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, p.Partition)
				}
				g.Topics = append(g.Topics, rt)
			}
		}
	}
	topics := indexTopics(view.Topics)
	out := make([]kmsg.DescribeShareGroupOffsetsResponseGroupTopic, len(g.Topics))
	var tps []sharepart.TopicPartition
	var at [][2]int // of tps: the topic and partition answered
	for i, t := range g.Topics {
		out[i] = kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		out[i].Topic = t.Topic
		tv := topics[t.Topic]
		var code int16
		switch {
		case !all && !s.authorizeTopic(ctx, acl.OpDescribe, t.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		case tv == nil:
			code = kerr.UnknownTopicOrPartition.Code
		default:
			out[i].TopicID = tv.ID
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, code
			if code == 0 {
				tps = append(tps, sharepart.TopicPartition{TopicID: tv.ID, Partition: p})
				at = append(at, [2]int{i, len(out[i].Partitions)})
			}
			out[i].Partitions = append(out[i].Partitions, rp)
		}
	}
	for j, st := range so.ReadShareStates(ctx, g.GroupID, tps) {
		rp := &out[at[j][0]].Partitions[at[j][1]]
		rp.ErrorCode, rp.ErrorMessage = ErrorCode(st.Err), errorMessage(st.Err)
		if st.OK {
			rp.StartOffset, rp.LeaderEpoch = st.Snapshot.StartOffset, st.Snapshot.LeaderEpoch
		}
	}
	if all { // only the share partitions that have state
		kept := out[:0]
		for _, t := range out {
			t.Partitions = withState(t.Partitions)
			if len(t.Partitions) > 0 {
				kept = append(kept, t)
			}
		}
		out = kept
	}
	return out
}

// withState keeps the partitions that have state or an error.
func withState(ps []kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition) []kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
	kept := ps[:0]
	for _, p := range ps {
		if p.StartOffset >= 0 || p.ErrorCode != 0 {
			kept = append(kept, p)
		}
	}
	return kept
}
