package kafkabackend

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/sharepart"
)

var _ kafkaapi.ShareOffsets = (*Backend)(nil)

// ReadShareStates implements kafkaapi.ShareOffsets: group's share
// partitions tps, each read from its share coordinator, with one
// ReadShareGroupState for all those another node coordinates. Before
// __share_group_state exists no share partition has state.
func (b *Backend) ReadShareStates(ctx context.Context, group string, tps []sharepart.TopicPartition) []kafkaapi.ShareState {
	out := make([]kafkaapi.ShareState, len(tps))
	n, ok := b.deps.Meta.State().TopicPartitions(metadata.ShareGroupStateTopic)
	if !ok {
		return out
	}
	remote := map[int32][]int{} // node -> indexes into tps
	for i, tp := range tps {
		key := sharepart.Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
		p := metadata.GroupPartition(key.String(), n)
		leader, _, ok := b.deps.PartitionLeader(metadata.ShareGroupStateTopic, p)
		switch {
		case !ok:
			out[i].Err = fmt.Errorf("%w: %s-%d has no leader", kerr.CoordinatorNotAvailable, metadata.ShareGroupStateTopic, p)
		case leader == b.cfg.NodeID:
			s, ok, err := b.deps.Shares.ShareStateRead(ctx, p, key, -1)
			out[i] = kafkaapi.ShareState{Snapshot: s, OK: ok, Err: err}
		default:
			remote[leader] = append(remote[leader], i)
		}
	}
	for node, idx := range remote {
		batch := make([]sharepart.TopicPartition, len(idx))
		for j, i := range idx {
			batch[j] = tps[i]
		}
		got, err := shareStore{b}.readRemoteMany(ctx, node, group, batch, -1)
		for _, i := range idx {
			r, ok := got[tps[i]]
			if err != nil || !ok {
				r = kafkaapi.ShareState{Err: fmt.Errorf("%w: share coordinator %d: %v", kerr.CoordinatorNotAvailable, node, err)}
			}
			out[i] = r
		}
	}
	return out
}

// ResetShareStates implements kafkaapi.ShareOffsets: each of group's
// share partitions tps starts again at starts[i] (-1: no state, as if
// never used), with its state epoch + 1. Where this node leads the data
// partition its share partition is replaced at once
// (sharepart.Manager.Reset); elsewhere the new state epoch fences the
// data partition's leader (FENCED_STATE_EPOCH at its next write), which
// then reloads it.
func (b *Backend) ResetShareStates(ctx context.Context, group string, tps []sharepart.TopicPartition, starts []int64) []error {
	st := shareStore{b}
	errs := make([]error, len(tps))
	for i, tp := range tps {
		key := sharepart.Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
		if log, ok := b.shareLog(key); ok {
			errs[i] = b.shares.mgr.Reset(ctx, key, log, starts[i])
			continue
		}
		cur, _, err := st.Read(ctx, key, -1)
		if err == nil {
			err = st.Write(ctx, key, sharepart.Snapshot{StateEpoch: cur.StateEpoch + 1, LeaderEpoch: -1, StartOffset: starts[i]})
		}
		errs[i] = err
	}
	return errs
}

// LatestOffsets implements kafkaapi.ShareOffsets: each partition's high
// watermark from its leader, as Kafka's group coordinator asks for a
// share partition's lag: this node's replica where it leads, else one
// ListOffsets (LATEST, read_uncommitted) per leader node for all the
// partitions it leads.
func (b *Backend) LatestOffsets(ctx context.Context, parts []kafkaapi.TopicPartition) []kafkaapi.LatestOffset {
	out := make([]kafkaapi.LatestOffset, len(parts))
	remote := map[int32][]int{} // node -> indexes into parts
	for i, tp := range parts {
		leader, _, ok := b.deps.PartitionLeader(tp.Topic, tp.Partition)
		switch {
		case !ok || leader < 0:
			out[i].Err = fmt.Errorf("%w: %s-%d has no leader", kerr.LeaderNotAvailable, tp.Topic, tp.Partition)
		case leader == b.cfg.NodeID:
			out[i] = b.localLatestOffset(ctx, tp)
		default:
			remote[leader] = append(remote[leader], i)
		}
	}
	for _, node := range slices.Sorted(maps.Keys(remote)) {
		b.remoteLatestOffsets(ctx, node, parts, remote[node], out)
	}
	return out
}

// localLatestOffset is the high watermark of a partition this node leads,
// once a new leader has settled (as ListOffsets answers it).
func (b *Backend) localLatestOffset(ctx context.Context, tp kafkaapi.TopicPartition) kafkaapi.LatestOffset {
	p, err := b.Partition(tp.Topic, tp.Partition)
	if err != nil {
		return kafkaapi.LatestOffset{Offset: -1, Err: err}
	}
	if !p.IsLeader() {
		return kafkaapi.LatestOffset{Offset: -1, Err: fmt.Errorf("%w: %s-%d", kerr.NotLeaderForPartition, tp.Topic, tp.Partition)}
	}
	if err := p.Settle(ctx); err != nil {
		return kafkaapi.LatestOffset{Offset: -1, Err: err}
	}
	return kafkaapi.LatestOffset{Offset: p.HighWatermark()}
}

// remoteLatestOffsets asks node, which leads the partitions parts[idx],
// for their high watermarks in one ListOffsets and fills out[idx]; a
// partition it does not answer is UNKNOWN_TOPIC_OR_PARTITION, as in
// Kafka's NetworkPartitionMetadataClient.
func (b *Backend) remoteLatestOffsets(ctx context.Context, node int32, parts []kafkaapi.TopicPartition, idx []int, out []kafkaapi.LatestOffset) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, 0
	topics := map[string]int{} // topic -> index in req.Topics
	asked := map[kafkaapi.TopicPartition]bool{}
	for _, i := range idx {
		if asked[parts[i]] { // Kafka refuses a partition named twice
			continue
		}
		asked[parts[i]] = true
		t, ok := topics[parts[i].Topic]
		if !ok {
			t = len(req.Topics)
			topics[parts[i].Topic] = t
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = parts[i].Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = parts[i].Partition, -1, -1
		req.Topics[t].Partitions = append(req.Topics[t].Partitions, rp)
	}
	got := map[kafkaapi.TopicPartition]kafkaapi.LatestOffset{}
	kresp, err := b.deps.Coordinators.RequestNode(ctx, node, req)
	if err == nil {
		for _, rt := range kresp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				got[kafkaapi.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = kafkaapi.LatestOffset{Offset: rp.Offset, Err: kerr.ErrorForCode(rp.ErrorCode)}
			}
		}
	}
	for _, i := range idx {
		r, ok := got[parts[i]]
		switch {
		case err != nil:
			r = kafkaapi.LatestOffset{Offset: -1, Err: fmt.Errorf("%w: node %d, the leader, did not answer: %v", kerr.RequestTimedOut, node, err)}
		case !ok:
			r = kafkaapi.LatestOffset{Offset: -1, Err: fmt.Errorf("%w: node %d did not answer for %s-%d", kerr.UnknownTopicOrPartition, node, parts[i].Topic, parts[i].Partition)}
		}
		out[i] = r
	}
}
