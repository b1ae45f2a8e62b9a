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
