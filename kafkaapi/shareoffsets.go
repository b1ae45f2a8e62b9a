package kafkaapi

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/sharepart"
)

// startDescribeShareGroupOffsets answers DescribeShareGroupOffsets v0-1
// from the share partitions' persisted state: each partition's start
// offset (SPSO; -1 for one with no state), the leader epoch that wrote
// it, and the lag (v1) as Kafka computes it (shareLag). DESCRIBE on the
// group, and on each topic (else TOPIC_AUTHORIZATION_FAILED); with no
// topics named, every topic the client may DESCRIBE, and only its
// partitions that have state. The group's membership is not consulted: a
// group nobody used has no offsets rather than GROUP_ID_NOT_FOUND.
func (s *Server) startDescribeShareGroupOffsets(req *kmsg.DescribeShareGroupOffsetsRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		so, _ := s.backend.(ShareOffsets)
		// Every topic's view only when a group names none.
		view := s.metadataView(ctx, slices.ContainsFunc(req.Groups, func(g kmsg.DescribeShareGroupOffsetsRequestGroup) bool {
			return g.Topics == nil
		}))
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
func (s *Server) describeShareOffsets(ctx context.Context, so ShareOffsets, view metadataView, g kmsg.DescribeShareGroupOffsetsRequestGroup) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
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
	out := make([]kmsg.DescribeShareGroupOffsetsResponseGroupTopic, len(g.Topics))
	var tps []sharepart.TopicPartition
	var at [][2]int // of tps: the topic and partition answered
	for i, t := range g.Topics {
		out[i] = kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		out[i].Topic = t.Topic
		tv := view.byName(t.Topic)
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
	fillShareOffsets(ctx, so, g.GroupID, tps, at, out)
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

// fillShareOffsets answers the share partitions tps (at: where each is in
// out) from their persisted state and, where that has a start offset, the
// lag from their data partitions' high watermarks (asked of each leader
// node once). A partition with no state has lag -1; one whose high
// watermark could not be read answers that error, as in Kafka.
func fillShareOffsets(ctx context.Context, so ShareOffsets, group string, tps []sharepart.TopicPartition, at [][2]int, out []kmsg.DescribeShareGroupOffsetsResponseGroupTopic) {
	states := so.ReadShareStates(ctx, group, tps)
	var (
		lagged []int // of tps: those with a start offset
		parts  []TopicPartition
	)
	for j, st := range states {
		rp := &out[at[j][0]].Partitions[at[j][1]]
		rp.ErrorCode, rp.ErrorMessage = ErrorCode(st.Err), errorMessage(st.Err)
		if !st.OK {
			continue
		}
		rp.StartOffset, rp.LeaderEpoch = st.Snapshot.StartOffset, st.Snapshot.LeaderEpoch
		if st.Err == nil && st.Snapshot.StartOffset >= 0 {
			lagged = append(lagged, j)
			parts = append(parts, TopicPartition{Topic: out[at[j][0]].Topic, Partition: tps[j].Partition})
		}
	}
	if len(parts) == 0 {
		return
	}
	for k, lo := range so.LatestOffsets(ctx, parts) {
		j := lagged[k]
		rp := &out[at[j][0]].Partitions[at[j][1]]
		if lo.Err != nil {
			rp.ErrorCode, rp.ErrorMessage = ErrorCode(lo.Err), errorMessage(lo.Err)
			rp.StartOffset, rp.LeaderEpoch = -1, -1
			continue
		}
		rp.Lag = shareLag(lo.Offset, states[j].Snapshot)
	}
}

// shareLag is Kafka's share partition lag (KIP-1226, computed by its
// GroupCoordinatorService): the high watermark less the start offset less
// the records past it whose delivery is complete (Acknowledged or
// Archived), that is the records a member may still be handed or holds.
// The high watermark is the next offset to be written, so there is no +1;
// as in Kafka nothing clamps the result.
func shareLag(highWatermark int64, s sharepart.Snapshot) int64 {
	return highWatermark - s.StartOffset - s.DeliveryComplete()
}
