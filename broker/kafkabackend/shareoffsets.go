package kafkabackend

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

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
