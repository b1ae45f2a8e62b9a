package kafkabackend

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
)

// Transaction verification (KIP-890): before a partition this node leads
// takes a producer's first transactional batch of a transaction, it asks
// the transactional id's coordinator whether the partition was added, with
// AddPartitionsToTxn v4 VerifyOnly, as Kafka's AddPartitionsToTxnManager
// does: in process when this node coordinates the id, else over the Kafka
// API to the coordinator's node (Coordinators.RequestNode).

// VerifyTxnPartitions asks the coordinator of transactionalID whether each
// of parts is in the ongoing transaction of producer pid at epoch. The
// errors are the coordinator's, or a routing or transport error for
// every part.
func (b *Backend) VerifyTxnPartitions(ctx context.Context, transactionalID string, pid int64, epoch int16, parts []kafkaapi.TopicPartition) []error {
	return b.txnPartitions(ctx, transactionalID, pid, epoch, parts, true)
}

var _ kafkaapi.TxnAdder = (*Backend)(nil)

// AddTxnPartitions adds parts to the transaction of producer pid at epoch
// (KIP-890 part 2), with AddPartitionsToTxn v5 to the coordinator.
func (b *Backend) AddTxnPartitions(ctx context.Context, transactionalID string, pid int64, epoch int16, parts []kafkaapi.TopicPartition) []error {
	return b.txnPartitions(ctx, transactionalID, pid, epoch, parts, false)
}

// AddTxnOffsets adds the group's __consumer_offsets partition to the
// transaction of producer pid at epoch, for TxnOffsetCommit v5.
func (b *Backend) AddTxnOffsets(ctx context.Context, transactionalID string, pid int64, epoch int16, group string) error {
	p, err := b.OffsetsPartition(ctx, group)
	if err != nil {
		return err
	}
	tp := kafkaapi.TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: p}
	return b.txnPartitions(ctx, transactionalID, pid, epoch, []kafkaapi.TopicPartition{tp}, false)[0]
}

// txnPartitions verifies (verifyOnly) or adds parts with the
// coordinator of transactionalID.
func (b *Backend) txnPartitions(ctx context.Context, transactionalID string, pid int64, epoch int16, parts []kafkaapi.TopicPartition, verifyOnly bool) []error {
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = transactionalID, pid, epoch, verifyOnly
	for _, tp := range parts {
		if n := len(t.Topics); n > 0 && t.Topics[n-1].Topic == tp.Topic {
			t.Topics[n-1].Partitions = append(t.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
		t.Topics = append(t.Topics, rt)
	}
	res, err := b.verifyTxn(ctx, &t)
	errs := make([]error, len(parts))
	for i, tp := range parts {
		if errs[i] = err; err == nil {
			errs[i] = partitionResult(res, tp)
		}
	}
	return errs
}

// verifyTxn sends one transaction (verify-only or not) to its coordinator and
// returns the coordinator's answer for it.
func (b *Backend) verifyTxn(ctx context.Context, t *kmsg.AddPartitionsToTxnRequestTransaction) (kmsg.AddPartitionsToTxnResponseTransaction, error) {
	node, err := b.txnCoordinatorNodeNow(t.TransactionalID)
	if err != nil {
		return kmsg.AddPartitionsToTxnResponseTransaction{}, err
	}
	if node == b.cfg.NodeID {
		c, err := b.TxnCoordinator(ctx, t.TransactionalID)
		if err != nil {
			return kmsg.AddPartitionsToTxnResponseTransaction{}, err
		}
		return c.AddPartitionsToTxnTransaction(ctx, t, txnBrokersVersion), nil
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	if !t.VerifyOnly {
		req.Version = txnBrokersVersion // an addition of transactions v2
	}
	req.Transactions = append(req.Transactions, *t)
	kresp, err := b.deps.Coordinators.RequestNode(ctx, node, req)
	if err != nil {
		return kmsg.AddPartitionsToTxnResponseTransaction{}, fmt.Errorf("AddPartitionsToTxn to node %d: %w", node, err)
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return kmsg.AddPartitionsToTxnResponseTransaction{}, fmt.Errorf("AddPartitionsToTxn to node %d: %w", node, err)
	}
	for _, rt := range resp.Transactions {
		if rt.TransactionalID == t.TransactionalID {
			return rt, nil
		}
	}
	return kmsg.AddPartitionsToTxnResponseTransaction{}, fmt.Errorf("%w: node %d did not answer for the transaction", kerr.UnknownServerError, node)
}

// txnBrokersVersion is the AddPartitionsToTxn version a partition leader
// adds partitions with for transactions v2 (Kafka's addPartition
// operation).
const txnBrokersVersion = 5

// txnCoordinatorNodeNow is the node coordinating a transactional id, from
// this node's view. Unlike FindCoordinator it never creates
// __transaction_state: without it no transaction exists yet, and Kafka
// answers COORDINATOR_NOT_AVAILABLE.
func (b *Backend) txnCoordinatorNodeNow(id string) (int32, error) {
	parts, ok := b.deps.Meta.State().TopicPartitions(metadata.TransactionStateTopic)
	if !ok {
		return -1, fmt.Errorf("%w: %s does not exist", kerr.CoordinatorNotAvailable, metadata.TransactionStateTopic)
	}
	p := metadata.TxnPartition(id, parts)
	leader, _, ok := b.deps.PartitionLeader(metadata.TransactionStateTopic, p)
	if !ok {
		return -1, fmt.Errorf("%w: %s-%d has no leader", kerr.CoordinatorNotAvailable, metadata.TransactionStateTopic, p)
	}
	return leader, nil
}

// partitionResult is the coordinator's answer for tp in res.
func partitionResult(res kmsg.AddPartitionsToTxnResponseTransaction, tp kafkaapi.TopicPartition) error {
	for _, rt := range res.Topics {
		if rt.Topic != tp.Topic {
			continue
		}
		for _, rp := range rt.Partitions {
			if rp.Partition == tp.Partition {
				return kerr.ErrorForCode(rp.ErrorCode)
			}
		}
	}
	return fmt.Errorf("%w: the coordinator did not answer for %s-%d", kerr.UnknownServerError, tp.Topic, tp.Partition)
}
