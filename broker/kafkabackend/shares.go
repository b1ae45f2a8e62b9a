package kafkabackend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/sharepart"
)

// Share groups (KIP-932), the share-partition half: the leader of a data
// partition keeps each share group's share partition of it in memory
// (sharepart.Manager) and writes every change, before answering, to the
// share coordinator: the leader of the __share_group_state partition its
// key hashes to, which is this node (coordhost) or another
// (WriteShareGroupState). docs/share-groups.md.

// ShareConfig is the share groups' configuration.
type ShareConfig struct {
	// StatePartitions and StateReplicationFactor shape
	// __share_group_state when first needed
	// (share.coordinator.state.topic.num.partitions, .replication.factor).
	StatePartitions        int32
	StateReplicationFactor int16
	// LockDuration is share.record.lock.duration.ms.
	LockDuration time.Duration
	// DeliveryLimit is share.delivery.count.limit.
	DeliveryLimit int16
	// MaxRecordLocks is group.share.partition.max.record.locks.
	MaxRecordLocks int
	// MaxSessions is group.share.max.share.sessions.
	MaxSessions int
	// ResetEarliest is share.auto.offset.reset=earliest (a group config
	// in Kafka, a node default here); else latest.
	ResetEarliest bool
}

// ShareCoordinator is the node's share coordinator (coordhost.Host): the
// __share_group_state partitions it leads.
type ShareCoordinator interface {
	ShareStateRead(ctx context.Context, p int32, key sharepart.Key, leaderEpoch int32) (sharepart.Snapshot, bool, error)
	ShareStateWrite(ctx context.Context, p int32, key sharepart.Key, s sharepart.Snapshot) error
}

// shares is the node's share partitions and share sessions.
type shares struct {
	mgr      *sharepart.Manager
	sessions *sharepart.Sessions
}

func newShares(b *Backend) *shares {
	c := b.cfg.Share
	cfg := sharepart.ManagerConfig{
		Partition: sharepart.Config{
			LockDurationMs: c.LockDuration.Milliseconds(), DeliveryLimit: c.DeliveryLimit, MaxLocks: c.MaxRecordLocks,
		},
		ResetEarliest: c.ResetEarliest,
		Now:           time.Now,
	}
	return &shares{mgr: sharepart.NewManager(cfg, shareStore{b}), sessions: sharepart.NewSessions(c.MaxSessions)}
}

var (
	_ kafkaapi.ShareGroups = (*Backend)(nil)
	_ kafkaapi.ShareStates = (*Backend)(nil)
)

// ShareManager implements kafkaapi.ShareGroups.
func (b *Backend) ShareManager() *sharepart.Manager { return b.shares.mgr }

// ShareSessions implements kafkaapi.ShareGroups.
func (b *Backend) ShareSessions() *sharepart.Sessions { return b.shares.sessions }

// ShareLockDurationMs implements kafkaapi.ShareGroups.
func (b *Backend) ShareLockDurationMs() int32 { return int32(b.cfg.Share.LockDuration.Milliseconds()) }

// ShareStateRead implements kafkaapi.ShareStates for another node.
func (b *Backend) ShareStateRead(ctx context.Context, key sharepart.Key, leaderEpoch int32) (sharepart.Snapshot, bool, error) {
	p, err := b.localStatePartition(key)
	if err != nil {
		return sharepart.Snapshot{}, false, err
	}
	return b.deps.Shares.ShareStateRead(ctx, p, key, leaderEpoch)
}

// ShareStateWrite implements kafkaapi.ShareStates for another node.
func (b *Backend) ShareStateWrite(ctx context.Context, key sharepart.Key, s sharepart.Snapshot) error {
	p, err := b.localStatePartition(key)
	if err != nil {
		return err
	}
	return b.deps.Shares.ShareStateWrite(ctx, p, key, s)
}

var _ kafkaapi.ShareCoordinators = (*Backend)(nil)

// ShareCoordinatorNode is the share coordinator of a share partition's
// key "group:topicId:partition": the leader of the __share_group_state
// partition its Java hash picks (creating the topic on first need).
func (b *Backend) ShareCoordinatorNode(ctx context.Context, key string) (int32, error) {
	_, leader, err := b.shareCoordinator(ctx, key)
	return leader, err
}

// shareCoordinator is key's __share_group_state partition and its leader.
func (b *Backend) shareCoordinator(ctx context.Context, key string) (p, leader int32, err error) {
	n, err := b.internalPartitions(ctx, metadata.ShareGroupStateTopic, b.cfg.Share.StatePartitions, b.cfg.Share.StateReplicationFactor)
	if err != nil {
		return -1, -1, err
	}
	p = metadata.GroupPartition(key, n)
	leader, _, ok := b.deps.PartitionLeader(metadata.ShareGroupStateTopic, p)
	if !ok {
		return p, -1, fmt.Errorf("%w: %s-%d has no leader yet", kerr.CoordinatorNotAvailable, metadata.ShareGroupStateTopic, p)
	}
	return p, leader, nil
}

// localStatePartition is key's __share_group_state partition, or
// NOT_COORDINATOR if the topic does not exist yet.
func (b *Backend) localStatePartition(key sharepart.Key) (int32, error) {
	n, ok := b.deps.Meta.State().TopicPartitions(metadata.ShareGroupStateTopic)
	if !ok {
		return -1, fmt.Errorf("%w: %s does not exist yet", kerr.NotCoordinator, metadata.ShareGroupStateTopic)
	}
	return metadata.GroupPartition(key.String(), n), nil
}

// shareStore is the Manager's sharepart.Store: key's share coordinator,
// here or on another node, retried while it moves or loads.
type shareStore struct{ b *Backend }

// shareRetry is the pause between attempts to reach a share coordinator
// that is moving, loading or being created.
const shareRetry = 50 * time.Millisecond

func (st shareStore) Read(ctx context.Context, key sharepart.Key, leaderEpoch int32) (sharepart.Snapshot, bool, error) {
	var s sharepart.Snapshot
	var ok bool
	err := st.retry(ctx, key, func(ctx context.Context, p, node int32) (err error) {
		if node == st.b.cfg.NodeID {
			s, ok, err = st.b.deps.Shares.ShareStateRead(ctx, p, key, leaderEpoch)
			return err
		}
		s, ok, err = st.readRemote(ctx, node, key, leaderEpoch)
		return err
	})
	return s, ok, err
}

func (st shareStore) Write(ctx context.Context, key sharepart.Key, s sharepart.Snapshot) error {
	return st.retry(ctx, key, func(ctx context.Context, p, node int32) error {
		if node == st.b.cfg.NodeID {
			return st.b.deps.Shares.ShareStateWrite(ctx, p, key, s)
		}
		return st.writeRemote(ctx, node, key, s)
	})
}

// retry calls op with key's __share_group_state partition and its leader
// (creating the topic on first need) until op succeeds, fails for good,
// or MetaProposal (or ctx) ends. Repeating a write is harmless: it is a
// whole snapshot, and the Manager writes a share partition's snapshots
// one at a time.
func (st shareStore) retry(ctx context.Context, key sharepart.Key, op func(ctx context.Context, p, node int32) error) error {
	b := st.b
	ctx, cancel := context.WithTimeout(ctx, b.cfg.MetaProposal)
	defer cancel()
	for {
		err := st.try(ctx, key, op)
		if err == nil || !shareRetriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(shareRetry):
		}
	}
}

func (st shareStore) try(ctx context.Context, key sharepart.Key, op func(ctx context.Context, p, node int32) error) error {
	p, leader, err := st.b.shareCoordinator(ctx, key.String())
	if err != nil {
		return err
	}
	return op(ctx, p, leader)
}

// shareRetriable reports a share coordinator that is moving, loading or
// not there yet, or a request to it that failed on the way.
func shareRetriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke == kerr.NotCoordinator || ke == kerr.CoordinatorNotAvailable || ke == kerr.CoordinatorLoadInProgress ||
			ke == kerr.NotLeaderForPartition || ke == kerr.RequestTimedOut
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func (st shareStore) readRemote(ctx context.Context, node int32, key sharepart.Key, leaderEpoch int32) (sharepart.Snapshot, bool, error) {
	tp := sharepart.TopicPartition{TopicID: key.TopicID, Partition: key.Partition}
	got, err := st.readRemoteMany(ctx, node, key.Group, []sharepart.TopicPartition{tp}, leaderEpoch)
	if err != nil {
		return sharepart.Snapshot{}, false, err
	}
	r, ok := got[tp]
	if !ok {
		return sharepart.Snapshot{}, false, fmt.Errorf("%w: malformed ReadShareGroupState answer", kerr.UnknownServerError)
	}
	return r.Snapshot, r.OK, r.Err
}

// readRemoteMany reads group's share partitions tps from node's share
// coordinator in one ReadShareGroupState.
func (st shareStore) readRemoteMany(ctx context.Context, node int32, group string, tps []sharepart.TopicPartition, leaderEpoch int32) (map[sharepart.TopicPartition]kafkaapi.ShareState, error) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].TopicID != tp.TopicID {
			rt := kmsg.NewReadShareGroupStateRequestTopic()
			rt.TopicID = tp.TopicID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch = tp.Partition, leaderEpoch
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	kresp, err := st.b.deps.Coordinators.RequestNode(ctx, node, req)
	if err != nil {
		return nil, err
	}
	out := make(map[sharepart.TopicPartition]kafkaapi.ShareState, len(tps))
	for _, rt := range kresp.(*kmsg.ReadShareGroupStateResponse).Topics {
		for _, got := range rt.Partitions {
			r := kafkaapi.ShareState{Err: kerr.ErrorForCode(got.ErrorCode), OK: got.ErrorCode == 0 && got.StartOffset >= 0}
			r.Snapshot = sharepart.Snapshot{StateEpoch: got.StateEpoch, StartOffset: got.StartOffset}
			for _, bt := range got.StateBatches {
				r.Snapshot.Batches = append(r.Snapshot.Batches, sharepart.Batch{First: bt.FirstOffset, Last: bt.LastOffset, State: sharepart.RecordState(bt.DeliveryState), DeliveryCount: bt.DeliveryCount})
			}
			out[sharepart.TopicPartition{TopicID: rt.TopicID, Partition: got.Partition}] = r
		}
	}
	return out, nil
}

func (st shareStore) writeRemote(ctx context.Context, node int32, key sharepart.Key, s sharepart.Snapshot) error {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = key.Group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = key.TopicID
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = key.Partition, s.StateEpoch, s.LeaderEpoch, s.StartOffset
	for _, bt := range s.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = bt.First, bt.Last, int8(bt.State), bt.DeliveryCount
		rp.StateBatches = append(rp.StateBatches, sb)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := st.b.deps.Coordinators.RequestNode(ctx, node, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.WriteShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("%w: malformed WriteShareGroupState answer", kerr.UnknownServerError)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// ExpireShareLocks releases, on this node's clock, the expired locks of
// the share partitions of the data partitions it leads, writing each
// change to the share coordinator, and forgets those it no longer leads.
// The node's housekeeping calls it every second.
func (b *Backend) ExpireShareLocks(ctx context.Context) error {
	return b.shares.mgr.ExpireAll(ctx, b.shareLog)
}

// shareLog is the local replica of key's data partition if this node
// leads it.
func (b *Backend) shareLog(k sharepart.Key) (sharepart.Log, bool) {
	t, ok := b.deps.Meta.State().TopicByID(metadata.TopicID(k.TopicID))
	if !ok {
		return nil, false
	}
	r, ok := b.deps.Replica(t.Name, k.Partition)
	if !ok || !r.Partition().IsLeader() {
		return nil, false
	}
	return r.Partition(), true
}

// shareConfigEntries are the share groups' settings under Kafka's names.
func shareConfigEntries(c ShareConfig) []kafkaapi.ConfigEntry {
	num := kmsg.ConfigTypeInt
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	reset := "latest"
	if c.ResetEarliest {
		reset = "earliest"
	}
	return []kafkaapi.ConfigEntry{
		{Name: "share.coordinator.state.topic.num.partitions", Value: itoa(int64(c.StatePartitions)), Type: num},
		{Name: "share.coordinator.state.topic.replication.factor", Value: itoa(int64(c.StateReplicationFactor)), Type: kmsg.ConfigTypeShort},
		{Name: "share.record.lock.duration.ms", Value: itoa(c.LockDuration.Milliseconds()), Type: num},
		{Name: "share.delivery.count.limit", Value: itoa(int64(c.DeliveryLimit)), Type: num},
		{Name: "group.share.partition.max.record.locks", Value: itoa(int64(c.MaxRecordLocks)), Type: num},
		{Name: "group.share.max.share.sessions", Value: itoa(int64(c.MaxSessions)), Type: num},
		{Name: "share.auto.offset.reset", Value: reset, Type: kmsg.ConfigTypeString},
	}
}
