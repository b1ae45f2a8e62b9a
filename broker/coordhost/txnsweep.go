package coordhost

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition"
)

// A transactional offset commit stays pending until its producer's
// marker. A commit whose transaction its coordinator ended without a
// marker here, or never had (written before commits were verified, or
// with verification off), would make every require_stable OffsetFetch of
// its group answer UNSTABLE_OFFSET_COMMIT for ever. So the leader of each
// __consumer_offsets partition, every TxnPendingOffsetsCheckInterval,
// asks the coordinator of each transaction pending for longer than that
// whether the producer's transaction at that epoch is still ongoing and
// holds the partition, and if the coordinator answers that it does not
// (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, INVALID_TXN_STATE)
// proposes the ABORT marker its coordinator would have written. Every
// replica applies the marker as any other: the decision is the leader's,
// made with its clock.
//
// Commits that name no transactional id (written before they named one)
// cannot be asked about: they are aborted once older than
// transaction.max.timeout.ms plus the coordinators' abort interval, by
// when every coordinator has aborted a transaction that old.

// pendingSweeper checks one led __consumer_offsets partition's pending
// transactional commits. It runs while the partition's group coordinator
// runs (groupCoord).
type pendingSweeper struct {
	h        *Host
	lr       *Replica
	verifier kafkaapi.TxnVerifier
	logger   *slog.Logger
}

// run checks every interval until ctx ends.
func (s *pendingSweeper) run(ctx context.Context) {
	t := time.NewTicker(s.h.cfg.TxnPendingOffsetsCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweep(ctx)
		}
	}
}

// sweep checks the transactions pending for longer than the interval.
func (s *pendingSweeper) sweep(ctx context.Context) {
	cfg := s.h.cfg
	unnamedAge := cfg.TxnMaxTimeout + cfg.TxnAbortInterval
	now := time.Now().UnixMilli()
	for _, p := range s.lr.Extra().view.PendingTxns() {
		age := time.Duration(now-p.Since) * time.Millisecond
		if ctx.Err() != nil {
			return
		}
		if age < cfg.TxnPendingOffsetsCheckInterval || (p.TransactionalID == "" && age < unnamedAge) {
			continue
		}
		s.check(ctx, p)
	}
}

// check aborts p's pending commits if its coordinator says its
// transaction is over, and nothing of the producer was written or
// verified here meanwhile (Verified.abortUnchanged): the producer
// may have begun its next transaction since.
func (s *pendingSweeper) check(ctx context.Context, p groupcoord.PendingTxn) {
	leaderEpoch := s.lr.Partition().LeaderEpoch()
	st := s.lr.Extra().verified.stamp(leaderEpoch, p.ProducerID)
	coordEpoch, why := s.ended(ctx, p)
	if why == nil {
		return
	}
	m := partition.TxnMarker{ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch, CoordinatorEpoch: coordEpoch}
	var prop *partition.Proposal
	if !s.lr.Extra().verified.abortUnchanged(leaderEpoch, p.ProducerID, st, func() {
		prop = s.lr.Partition().ProposeEndTxn(m, s.h.cfg.Tuning.Proposal)
	}) {
		return
	}
	res, err := prop.Wait()
	if err == nil {
		err = res.Err
	}
	attrs := []any{"partition", s.lr.Info().Partition, "producer_id", p.ProducerID, "producer_epoch", p.ProducerEpoch,
		"transactional_id", p.TransactionalID, "reason", why}
	if err != nil {
		s.logger.Warn("pending transactional offset commits not aborted", append(attrs, "err", err)...)
		return
	}
	s.logger.Info("aborted transactional offset commits whose transaction is over", attrs...)
}

// ended reports why p's transaction is over (nil if it may not be), with
// the coordinator epoch for its ABORT marker: that of the transactional
// id's coordinator now, which is at least that of any marker it wrote
// here and at most that of any it will write; 0, which fences no
// coordinator, for a transaction that names no id.
func (s *pendingSweeper) ended(ctx context.Context, p groupcoord.PendingTxn) (int32, error) {
	if p.TransactionalID == "" {
		return 0, errors.New("commits with no transactional id, older than transaction_max_timeout")
	}
	ctx, cancel := context.WithTimeout(ctx, s.h.cfg.Tuning.Request)
	defer cancel()
	tp := kafkaapi.TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: s.lr.Info().Partition}
	err := s.verifier.VerifyTxnPartitions(ctx, p.TransactionalID, p.ProducerID, p.ProducerEpoch, []kafkaapi.TopicPartition{tp})[0]
	switch {
	case err == nil:
		return 0, nil
	case errors.Is(err, kerr.InvalidProducerIDMapping), errors.Is(err, kerr.ProducerFenced),
		errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.InvalidTxnState):
	default: // no answer (no coordinator, one loading or writing markers): ask again later
		s.logger.Debug("pending transactional offset commits not checked", "producer_id", p.ProducerID, "err", err)
		return 0, nil
	}
	parts, ok := s.h.deps.Meta.State().TopicPartitions(metadata.TransactionStateTopic)
	if !ok {
		return 0, nil
	}
	_, coordEpoch, ok := s.h.deps.PartitionLeader(metadata.TransactionStateTopic, metadata.TxnPartition(p.TransactionalID, parts))
	if !ok {
		return 0, nil
	}
	return coordEpoch, err
}
