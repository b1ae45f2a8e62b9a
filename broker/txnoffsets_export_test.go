package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/broker/coordhost"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/record"
)

// OffsetsPartition is the __consumer_offsets partition of group, from this
// node's metadata; ok is false while the topic does not exist.
func (n *Node) OffsetsPartition(group string) (p int32, ok bool) {
	parts, ok := n.meta.State().TopicPartitions(metadata.ConsumerOffsetsTopic)
	if !ok {
		return -1, false
	}
	return metadata.GroupPartition(group, parts), true
}

// ProposeUnverifiedTxnOffset writes, through this node's replica of
// group's __consumer_offsets partition, which it must lead, a pending
// transactional offset commit of producer pid at epoch for topic/p: the
// batch a TxnOffsetCommit wrote before commits were verified, with no
// transactional id, straight through Raft.
func (n *Node) ProposeUnverifiedTxnOffset(ctx context.Context, group, topic string, p int32, offset, pid int64, epoch int16) error {
	op, ok := n.OffsetsPartition(group)
	if !ok {
		return fmt.Errorf("%w: no %s", kerr.CoordinatorNotAvailable, metadata.ConsumerOffsetsTopic)
	}
	lr, ok := n.reps.Get(metadata.ConsumerOffsetsTopic, op)
	if !ok || !lr.Partition().IsLeader() {
		return fmt.Errorf("%w: node %d does not lead %s-%d", kerr.NotLeaderForPartition, n.cfg.NodeID, metadata.ConsumerOffsetsTopic, op)
	}
	now := time.Now().UnixMilli()
	r := groupcoord.OffsetRecord(group, topic, p, groupcoord.Offset{Offset: offset, LeaderEpoch: -1, CommitTimestamp: now})
	batch, err := record.AppendBatch(nil, record.BatchOptions{ProducerID: pid, ProducerEpoch: epoch,
		BaseSequence: record.NoSequence, Transactional: true}, []record.Record{{Timestamp: now, Key: r.Key, Value: r.Value}})
	if err != nil {
		return err
	}
	res, err := lr.Partition().ProposeCoordinator(batch, time.Until(deadline(ctx))).Wait()
	return coordhost.ProposalError(res, err)
}

// HasPendingTxnOffset reports whether this node's replica of group's
// __consumer_offsets partition holds a transactional commit for topic/p
// awaiting its marker; ok is false when the node holds no such replica.
func (n *Node) HasPendingTxnOffset(group, topic string, p int32) (pending, ok bool) {
	op, ok := n.OffsetsPartition(group)
	if !ok {
		return false, false
	}
	lr, ok := n.reps.Get(metadata.ConsumerOffsetsTopic, op)
	if !ok {
		return false, false
	}
	return lr.Extra().View().Pending(group, topic, p), true
}

func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(10 * time.Second)
}
