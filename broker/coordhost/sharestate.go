package coordhost

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/sharepart"
)

// The share-group state: each partition of __share_group_state this node
// leads serves the snapshots of the share partitions whose keys hash to
// it (Kafka's share coordinator), from the view its records build. A
// write is checked against the view and proposed under the partition's
// lock, so a snapshot from an older leader epoch of the data partition
// than the one stored never enters the log (FENCED_LEADER_EPOCH).

// shareStateLocks is the number of locks that serialise share-state
// writes, by state partition.
const shareStateLocks = 64

// shareStateReplica returns the settled leader replica of
// __share_group_state partition p, or NOT_COORDINATOR.
func (h *Host) shareStateReplica(ctx context.Context, p int32) (*Replica, error) {
	lr, ok := h.deps.Replica(metadata.ShareGroupStateTopic, p)
	if !ok || lr.Extra().shareView == nil || !lr.Partition().IsLeader() {
		return nil, fmt.Errorf("%w: %s-%d is not led here", kerr.NotCoordinator, metadata.ShareGroupStateTopic, p)
	}
	if err := lr.Partition().Settle(ctx, h.cfg.Tuning.Proposal); err != nil {
		return nil, fmt.Errorf("%w: %s-%d is settling: %w", kerr.CoordinatorLoadInProgress, metadata.ShareGroupStateTopic, p, err)
	}
	return lr, nil
}

// ShareStateRead returns key's snapshot from __share_group_state
// partition p, which this node must lead; false if the share partition
// has no state. A leaderEpoch above the stored one (a new leader of the
// data partition loading it) is first written with the state, so that
// its predecessor's later writes are fenced.
func (h *Host) ShareStateRead(ctx context.Context, p int32, key sharepart.Key, leaderEpoch int32) (sharepart.Snapshot, bool, error) {
	lr, err := h.shareStateReplica(ctx, p)
	if err != nil {
		return sharepart.Snapshot{}, false, err
	}
	mu := &h.shareLocks[p%shareStateLocks]
	mu.Lock()
	defer mu.Unlock()
	cur, ok := lr.Extra().shareView.Get(key)
	if !ok {
		cur = sharepart.Snapshot{StartOffset: -1, LeaderEpoch: -1}
	}
	if leaderEpoch > cur.LeaderEpoch {
		cur.LeaderEpoch = leaderEpoch
		if err := h.appendShareState(ctx, lr, key, cur); err != nil {
			return sharepart.Snapshot{}, false, err
		}
	}
	return cur, !cur.Uninitialised(), nil
}

// ShareStateWrite writes s as key's snapshot through __share_group_state
// partition p, which this node must lead, and returns once it is
// committed: FENCED_LEADER_EPOCH if the stored snapshot is of the same
// state epoch and a later leader epoch, FENCED_STATE_EPOCH if of a later
// state epoch. A snapshot of a later state epoch (a reset) keeps the
// stored leader epoch if it is later.
func (h *Host) ShareStateWrite(ctx context.Context, p int32, key sharepart.Key, s sharepart.Snapshot) error {
	lr, err := h.shareStateReplica(ctx, p)
	if err != nil {
		return err
	}
	mu := &h.shareLocks[p%shareStateLocks]
	mu.Lock()
	defer mu.Unlock()
	if cur, ok := lr.Extra().shareView.Get(key); ok {
		switch {
		case cur.StateEpoch > s.StateEpoch:
			return kerr.FencedStateEpoch
		case cur.StateEpoch < s.StateEpoch: // a reset (AlterShareGroupOffsets): older leaders stay fenced
			s.LeaderEpoch = max(s.LeaderEpoch, cur.LeaderEpoch)
		case cur.LeaderEpoch > s.LeaderEpoch:
			return kerr.FencedLeaderEpoch
		}
	}
	return h.appendShareState(ctx, lr, key, s)
}

// appendShareState writes key's snapshot through lr's Raft log, under
// the partition's share lock.
func (h *Host) appendShareState(ctx context.Context, lr *Replica, key sharepart.Key, s sharepart.Snapshot) error {
	rec := groupcoord.Record{Key: sharepart.EncodeKey(key), Value: sharepart.EncodeValue(s)}
	return offsetsLog{lr.Partition(), h.cfg.Tuning.Proposal}.Append(ctx, []groupcoord.Record{rec})
}

// shareViewSink feeds a __share_group_state replica's records to its
// view. A record the view cannot read leaves it unchanged on every
// replica alike.
type shareViewSink struct {
	view   *sharepart.View
	logger interface{ Warn(string, ...any) }
}

func (s shareViewSink) Reset() { s.view.Reset() }

func (s shareViewSink) Record(key, value []byte) {
	if err := s.view.Apply(key, value); err != nil {
		s.logger.Warn("record of __share_group_state skipped", "err", err)
	}
}

// ForgetDeletedShareState ends the share state of deleted topics: through
// each __share_group_state partition this node leads, it writes
// tombstones for the share partitions whose topic this node's metadata
// does not hold now and did not hold at the previous call either (so a
// topic created a moment ago, not yet in this node's metadata, is not
// taken for a deleted one). The node's housekeeping calls it every
// minute, from one goroutine.
func (h *Host) ForgetDeletedShareState(ctx context.Context) {
	state := h.deps.Meta.State()
	n, ok := state.TopicPartitions(metadata.ShareGroupStateTopic)
	if !ok {
		return
	}
	gone := map[sharepart.Key]bool{}
	for p := range n {
		lr, ok := h.deps.Replica(metadata.ShareGroupStateTopic, p)
		if !ok || lr.Extra().shareView == nil || !lr.Partition().IsLeader() {
			continue
		}
		var dead []groupcoord.Record
		for _, k := range lr.Extra().shareView.Keys("") {
			if _, ok := state.TopicByID(metadata.TopicID(k.TopicID)); ok {
				continue
			}
			if h.shareGone[k] {
				dead = append(dead, groupcoord.Record{Key: sharepart.EncodeKey(k)})
			} else {
				gone[k] = true
			}
		}
		if len(dead) > 0 {
			mu := &h.shareLocks[p%shareStateLocks]
			mu.Lock()
			err := offsetsLog{lr.Partition(), h.cfg.Tuning.Proposal}.Append(ctx, dead)
			mu.Unlock()
			if err != nil {
				h.logger.Warn("share state of deleted topics not forgotten", "partition", p, "err", err)
			}
		}
	}
	h.shareGone = gone
}
