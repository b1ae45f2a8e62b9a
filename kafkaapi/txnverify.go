package kafkaapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnVerifier is the part of the Transactions role behind KIP-890's check
// on Produce: a transactional batch is written only into a partition that
// its producer's ongoing transaction holds, as the transactional id's
// coordinator knows it. With Config.DisableTxnPartitionVerification the
// server never asks, and transactional batches are written unverified.
type TxnVerifier interface {
	// VerifyTxnPartitions asks the coordinator of transactionalID whether
	// each of parts is in the ongoing transaction of producer pid at
	// epoch (AddPartitionsToTxn v4 with VerifyOnly) and returns one error
	// per part: nil if it is, else the coordinator's error
	// (kerr.InvalidTxnState for a partition not added,
	// kerr.ProducerFenced, kerr.InvalidProducerIDMapping,
	// kerr.ConcurrentTransactions, kerr.NotCoordinator, ...) or one
	// reaching it. It blocks for the round trip, bounded by ctx.
	VerifyTxnPartitions(ctx context.Context, transactionalID string, pid int64, epoch int16, parts []TopicPartition) []error
}

// TxnAdder is an optional capability of a Backend, found by type
// assertion: the partition leader's side of transactions v2 (KIP-890 part
// 2), where a Produce v12+ or a TxnOffsetCommit v5+ adds its partition to
// the producer's transaction itself, with AddPartitionsToTxn v5 (the
// brokers' form without VerifyOnly) to the transactional id's coordinator,
// instead of the client's AddPartitionsToTxn or AddOffsetsToTxn. A backend
// without it answers those requests' transactional writes
// INVALID_TXN_STATE unless the client added the partitions.
type TxnAdder interface {
	// AddTxnPartitions adds each of parts to the transaction of producer
	// pid at epoch (starting it if none is ongoing) and returns one error
	// per part, as VerifyTxnPartitions does.
	AddTxnPartitions(ctx context.Context, transactionalID string, pid int64, epoch int16, parts []TopicPartition) []error
	// AddTxnOffsets adds the group's partition of __consumer_offsets to
	// the transaction, as AddOffsetsToTxn does.
	AddTxnOffsets(ctx context.Context, transactionalID string, pid int64, epoch int16, group string) error
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// verifyTxnBatches checks the transactional batches of a Produce before
// any batch is proposed, and returns the batches to propose; fail answers
// the others. A batch its partition does not know as verified is verified
// with the coordinator here, on the connection's reader, so that the
// batches of the connection are still proposed in order; Kafka likewise
// reads nothing more from a connection until its request is answered.
//
// From Produce v12 the partitions are added, not only verified (TxnAdder),
// whatever DisableTxnPartitionVerification says: a client of transactions
// v2 adds them no other way.
func (s *Server) verifyTxnBatches(ctx context.Context, req *kmsg.ProduceRequest, batches []produceBatch, fail func(*kmsg.ProduceResponseTopicPartition, error)) []produceBatch {
	adder, _ := s.backend.(TxnAdder)
	add := req.Version >= 12 && adder != nil
	if s.cfg.DisableTxnPartitionVerification && !add {
		return batches
	}
	var pid int64 = -1
	var epoch int16
	var ask []int // indexes of the batches to verify with the coordinator
	var parts []TopicPartition
	for i := range batches {
		b := &batches[i]
		switch {
		case !b.h.IsTransactional():
			continue
		case req.TransactionID == nil:
			// Kafka's check that the producer may write for the
			// transactional id fails when there is none.
			b.err = fmt.Errorf("%w: a transactional batch needs the request's transactional id", kerr.TransactionalIDAuthorizationFailed)
			continue
		case pid < 0:
			pid, epoch = b.h.ProducerID, b.h.ProducerEpoch
		case b.h.ProducerID != pid || b.h.ProducerEpoch != epoch:
			b.err = fmt.Errorf("%w: transactional batches of more than one producer in one request", kerr.InvalidProducerIDMapping)
			continue
		}
		b.verified = true // until the coordinator says otherwise
		var known bool
		if known, b.guard = b.p.TxnVerified(pid, epoch); known {
			continue
		}
		ask = append(ask, i)
		parts = append(parts, TopicPartition{Topic: b.topic, Partition: b.resp.Partition})
	}
	if len(ask) > 0 {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		var errs []error
		if add {
			errs = adder.AddTxnPartitions(ctx, *req.TransactionID, pid, epoch, parts)
		} else {
			errs = s.backend.VerifyTxnPartitions(ctx, *req.TransactionID, pid, epoch, parts)
		}
		cancel()
		for j, i := range ask {
			if errs[j] != nil {
				batches[i].err = verifyError(errs[j], req.Version)
			}
		}
	}
	out := batches[:0]
	for _, b := range batches {
		if b.err != nil {
			fail(b.resp, b.err)
			continue
		}
		out = append(out, b)
	}
	return out
}

// verifyError is a Produce's answer (at version) for a batch its
// coordinator did not verify, as Kafka translates the coordinator's answer
// for producers: a partition not in the transaction is INVALID_TXN_STATE,
// from v11 TRANSACTION_ABORTABLE (KIP-890: the producer can abort and go
// on); PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, and an answer that
// leaves the outcome open (no coordinator, one loading or writing the
// markers) is NOT_ENOUGH_REPLICAS, which producers retry, except that
// from v12 the coordinator's CONCURRENT_TRANSACTIONS is answered as it is
// (Kafka 4.0, KAFKA-18662); a failure to reach the coordinator is
// NETWORK_EXCEPTION, retried too.
func verifyError(err error, version int16) error {
	var ke *kerr.Error
	switch {
	case (errors.Is(err, kerr.InvalidTxnState) || errors.Is(err, kerr.TransactionAbortable)) && version >= 11:
		return fmt.Errorf("%w: the partition was not added to the transaction", kerr.TransactionAbortable)
	case errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.TransactionAbortable):
		return fmt.Errorf("%w: the partition was not added to the transaction", kerr.InvalidTxnState)
	case errors.Is(err, kerr.ProducerFenced):
		return fmt.Errorf("%w: %w", kerr.InvalidProducerEpoch, err)
	case errors.Is(err, kerr.ConcurrentTransactions) && version >= 12:
		// Kafka 4.0 answers it as it is from v12 (KAFKA-18662).
		return fmt.Errorf("%w: the previous transaction is still being completed", kerr.ConcurrentTransactions)
	case errors.Is(err, kerr.ConcurrentTransactions), errors.Is(err, kerr.CoordinatorLoadInProgress),
		errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.NotCoordinator):
		return fmt.Errorf("%w: unable to verify that the partition was added to the transaction: %w", kerr.NotEnoughReplicas, err)
	case errors.As(err, &ke), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("%w: verifying the transaction with its coordinator: %w", kerr.NetworkException, err)
}
