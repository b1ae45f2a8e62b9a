package coordhost

import (
	"context"
	"fmt"
	"time"

	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition"
)

// offsetsTxnLog is the groupcoord.TxnLog of a __consumer_offsets replica
// this node leads. A TxnOffsetCommit's transaction is verified as a
// Produce's (KIP-890, Deps.Verifier): the partition leader asks the
// transactional id's coordinator whether the producer's ongoing
// transaction holds this partition (AddOffsetsToTxn adds the group's
// partition), once per transaction, remembered in the replica's
// Verified; Kafka's GroupCoordinator does the same through its
// ReplicaManager.
type offsetsTxnLog struct {
	offsetsLog
	lr *Replica
	// verifier asks coordinators; nil when transaction verification is
	// off (transaction_partition_verification), as Kafka's
	// transaction.partition.verification.enable turns off both checks.
	verifier kafkaapi.TxnVerifier
}

var _ groupcoord.TxnLog = offsetsTxnLog{}

// VerifyTxn implements groupcoord.TxnLog.
func (l offsetsTxnLog) VerifyTxn(ctx context.Context, txn groupcoord.Txn) (groupcoord.TxnGuard, error) {
	known, guard := l.lr.Extra().verified.Check(l.rep.LeaderEpoch(), txn.ProducerID, txn.ProducerEpoch)
	if known || l.verifier == nil {
		return groupcoord.TxnGuard(guard), nil
	}
	tp := kafkaapi.TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: l.lr.Info().Partition}
	if err := l.verifier.VerifyTxnPartitions(ctx, txn.TransactionalID, txn.ProducerID, txn.ProducerEpoch, []kafkaapi.TopicPartition{tp})[0]; err != nil {
		return 0, fmt.Errorf("%w: %w", groupcoord.ErrTxnUnverified, err)
	}
	return groupcoord.TxnGuard(guard), nil
}

// AppendTxn implements groupcoord.TxnLog: the records go as one
// transactional batch of the producer, written as its coordinator
// (partition.Replica.ProposeCoordinator: sequence -1, epoch checked),
// unless a marker for the producer or a new leader epoch came after
// guard.
func (l offsetsTxnLog) AppendTxn(ctx context.Context, txn groupcoord.Txn, guard groupcoord.TxnGuard, recs []groupcoord.Record) error {
	batch, err := groupcoord.AppendTxnBatch(nil, txn, recs, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	enqueue := l.enqueue
	if d, ok := ctx.Deadline(); ok {
		enqueue = max(time.Until(d), time.Millisecond)
	}
	var prop *partition.Proposal
	if err := l.lr.Extra().verified.Produce(l.rep.LeaderEpoch(), txn.ProducerID, txn.ProducerEpoch, kafkaapi.TxnGuard(guard), func() {
		prop = l.rep.ProposeCoordinator(batch, enqueue)
	}); err != nil {
		return err
	}
	res, err := prop.Wait()
	return ProposalError(res, err)
}
