package groupcoord

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// Txn names the transaction a TxnOffsetCommit belongs to.
type Txn struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
}

// TxnGuard is what a TxnLog knew of a transaction's verification when
// VerifyTxn answered; AppendTxn writes nothing under a guard that a marker
// of the producer, or a new leadership, has outdated since.
type TxnGuard uint64

// ErrTxnUnverified is wrapped by VerifyTxn's errors: the transaction's
// coordinator did not confirm that the producer's ongoing transaction
// holds this partition. The error wraps the coordinator's answer too (a
// *kerr.Error: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
// INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, ...), or
// the failure to reach it.
var ErrTxnUnverified = errors.New("groupcoord: transaction not verified")

// TxnLog is the optional Log capability that TxnOffsetCommit needs.
type TxnLog interface {
	// VerifyTxn checks, as Kafka does before a TxnOffsetCommit is looked
	// at (KIP-890), that txn's producer has an ongoing transaction to
	// which this partition was added (AddOffsetsToTxn), asking the
	// transaction's coordinator unless the log knows it already. Its
	// errors wrap ErrTxnUnverified. A log that does not verify
	// (transaction.partition.verification.enable off) answers nil.
	VerifyTxn(ctx context.Context, txn Txn) (TxnGuard, error)
	// AppendTxn commits records as one transactional batch of txn's
	// producer, which the View keeps pending until the producer's
	// marker; every record names txn's transactional id (AppendTxnBatch).
	// Under an outdated guard it writes nothing and answers
	// kerr.InvalidTxnState. Other errors are as Append's; a stale epoch is
	// kerr.InvalidProducerEpoch.
	AppendTxn(ctx context.Context, txn Txn, guard TxnGuard, records []Record) error
}

// AppendTxnBatch appends to dst the transactional batch of txn's producer
// that holds recs, each with the TxnIDHeader naming txn's transactional
// id. Its sequence is -1: the producer's coordinator writes it.
func AppendTxnBatch(dst []byte, txn Txn, recs []Record, timestampMillis int64) ([]byte, error) {
	hdr := []record.RecordHeader{{Key: TxnIDHeader, Value: []byte(txn.TransactionalID)}}
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{Timestamp: timestampMillis, Key: r.Key, Value: r.Value, Headers: hdr}
	}
	return record.AppendBatch(dst, record.BatchOptions{ProducerID: txn.ProducerID, ProducerEpoch: txn.ProducerEpoch,
		BaseSequence: record.NoSequence, Transactional: true}, rs)
}

// TxnOffsetCommit serves TxnOffsetCommit v0-3: offsets a transactional
// producer commits for a group, pending until its transaction ends (the
// COMMIT marker the transaction coordinator writes into this partition).
// The transaction is verified first (TxnLog.VerifyTxn), as in Kafka; an
// error then is every partition's. A commit with generation -1 and no
// member is allowed whatever the group's state, as in Kafka; one with a
// member is checked against the group like OffsetCommit
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID). Without a
// TxnLog it is UNSUPPORTED_VERSION.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	errs := make(map[[2]any]*kerr.Error)
	var recs []Record
	txn := Txn{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch}
	guard, top := c.checkTxnCommit(ctx, txn, req)
	now := time.Now().UnixMilli()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			key := [2]any{t.Topic, p.Partition}
			switch meta := deref(p.Metadata); {
			case top != nil:
				errs[key] = top
			case !c.cfg.TopicExists(t.Topic, p.Partition):
				errs[key] = kerr.UnknownTopicOrPartition
			case len(meta) > c.cfg.MaxOffsetMetadata:
				errs[key] = kerr.OffsetMetadataTooLarge
			default:
				recs = append(recs, OffsetRecord(req.Group, t.Topic, p.Partition, Offset{
					Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: meta, CommitTimestamp: now}))
			}
		}
	}
	if len(recs) > 0 {
		if err := c.appendTxn(ctx, txn, guard, recs); err != nil {
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					if k := [2]any{t.Topic, p.Partition}; errs[k] == nil {
						errs[k] = err
					}
				}
			}
		}
	}
	return txnCommitResponse(req, errs)
}

// txnCommitResponse answers req with each partition's error in errs.
func txnCommitResponse(req *kmsg.TxnOffsetCommitRequest, errs map[[2]any]*kerr.Error) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if e := errs[[2]any{t.Topic, p.Partition}]; e != nil {
				rp.ErrorCode = e.Code
				if e == kerr.ProducerFenced && req.Version < 3 {
					rp.ErrorCode = kerr.InvalidProducerEpoch.Code
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// checkTxnCommit verifies a TxnOffsetCommit's transaction, then checks it
// against the group, and returns the guard to write under or the error
// of every partition.
func (c *Coordinator) checkTxnCommit(ctx context.Context, txn Txn, req *kmsg.TxnOffsetCommitRequest) (TxnGuard, *kerr.Error) {
	tl, ok := c.log.(TxnLog)
	if !ok {
		return 0, kerr.UnsupportedVersion
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return 0, kerr.NotCoordinator
	}
	if len(req.Group) > MaxGroupIDBytes {
		return 0, kerr.InvalidGroupID
	}
	guard, err := c.verifyTxn(ctx, tl, txn)
	if err != nil {
		return 0, err
	}
	if req.Generation < 0 && req.MemberID == "" && req.InstanceID == nil {
		return guard, nil
	}
	return guard, c.validateCommit(req.Group, req.Generation, req.MemberID, req.InstanceID)
}

// verifyTxn verifies txn through the TxnLog within the commit timeout.
func (c *Coordinator) verifyTxn(ctx context.Context, tl TxnLog, txn Txn) (TxnGuard, *kerr.Error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	guard, err := tl.VerifyTxn(ctx, txn)
	switch {
	case err == nil:
		return guard, nil
	case c.ctx.Err() != nil:
		return 0, kerr.NotCoordinator
	}
	c.logger.Debug("groupcoord: transactional offset commit not verified", "transactional_id", txn.TransactionalID,
		"producer_id", txn.ProducerID, "producer_epoch", txn.ProducerEpoch, "err", err)
	return 0, verifyError(err)
}

// verifyError is a TxnOffsetCommit's answer when its transaction was not
// verified, as Kafka converts it: the coordinator's PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH (AddPartitionsToTxnManager), and, as for other
// group writes (GroupMetadataManager.maybeConvertOffsetCommitError), a
// coordinator that could not be reached is COORDINATOR_LOAD_IN_PROGRESS
// (NETWORK_EXCEPTION in Kafka, which older clients do not retry) and a
// refused verify request (CLUSTER_AUTHORIZATION_FAILED) INVALID_TXN_STATE.
// INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS
// and the coordinator lookup's errors pass as they are.
func verifyError(err error) *kerr.Error {
	ke, ok := errors.AsType[*kerr.Error](err)
	switch {
	case !ok || ke == nil || ke == kerr.NetworkException:
		return kerr.CoordinatorLoadInProgress
	case ke == kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case ke == kerr.ClusterAuthorizationFailed:
		return kerr.InvalidTxnState
	}
	return appendError(ke)
}

// appendTxn commits a producer's transactional records through the TxnLog
// within the commit timeout.
func (c *Coordinator) appendTxn(ctx context.Context, txn Txn, guard TxnGuard, recs []Record) *kerr.Error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	err := c.log.(TxnLog).AppendTxn(ctx, txn, guard, recs)
	switch {
	case err == nil:
		return nil
	case c.ctx.Err() != nil:
		return kerr.NotCoordinator
	case errors.Is(err, kerr.InvalidProducerEpoch):
		return kerr.ProducerFenced
	}
	return appendError(err)
}
