package txncoord

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Transactions v2 (KIP-890 part 2, EndTxn v5): every EndTxn bumps the
// producer's epoch, writes the markers with the bumped epoch, and hands the
// producer that epoch for its next transaction. A partition leader that
// writes such a marker takes its epoch as the producer's, so a write of
// the old epoch (a zombie, or a late retry of the ended transaction) is
// fenced there, and no transaction can hang open after its end. When the
// bump reaches the last epoch (MaxInt16), the transaction completes with
// a new producer id at epoch 0.

// TxnVersion2 is the transaction version of KIP-890 part 2.
const TxnVersion2 = 2

// EndTxnV2 ends id's transaction as EndTxn v5 does and returns the
// producer id and epoch for the producer's next transaction. Besides
// EndTxn's cases: an abort with no transaction ongoing is allowed (it
// bumps the epoch and writes no marker), and a retry with the epoch
// before the bump is answered as the original was.
func (c *Coordinator) EndTxnV2(ctx context.Context, id string, pid int64, epoch int16, commit bool) (int64, int16, error) {
	defer c.ids.lock(id)()
	m, ok := c.view.Txn(id)
	if !ok {
		return -1, -1, kerr.InvalidProducerIDMapping
	}
	retryBump := m.ProducerID == pid && epoch < math.MaxInt16 && m.ProducerEpoch == epoch+1
	retryOverflow := m.PrevProducerID == pid && epoch == math.MaxInt16-1 && m.ProducerEpoch == 0
	retry := retryBump || retryOverflow
	switch {
	case m.ProducerID != pid && !retryOverflow:
		return -1, -1, kerr.InvalidProducerIDMapping
	case m.ProducerEpoch != epoch && !retry:
		return -1, -1, kerr.ProducerFenced
	}
	switch {
	case (m.State == Ongoing || m.State == Empty) && retry:
		return -1, -1, kerr.ProducerFenced // as Kafka: these states take only the current epoch
	case m.State == Ongoing:
		return c.prepareV2(ctx, id, m, commit)
	case m.State == PrepareCommit && commit, m.State == PrepareAbort && !commit:
		c.startCompletion(id, m) // resumes one that gave up; a no-op while one runs
		return -1, -1, kerr.ConcurrentTransactions
	case m.State == CompleteCommit && commit && retry, m.State == CompleteAbort && !commit && retry:
		return m.ProducerID, m.ProducerEpoch, nil // a retry of what already happened
	case !commit && !retry && (m.State == Empty || m.State == CompleteCommit || m.State == CompleteAbort):
		return c.prepareV2(ctx, id, m, false) // an empty abort: only the epoch moves
	}
	return -1, -1, kerr.InvalidTxnState
}

// prepareV2 writes m's Prepare state with the bumped epoch (and, if that
// is the last epoch, the producer id to go on with), starts the markers,
// and returns the identity the producer continues with. Call with id's
// lock held.
func (c *Coordinator) prepareV2(ctx context.Context, id string, m Metadata, commit bool) (int64, int16, error) {
	next := m
	next.State, next.TxnVersion, next.NextProducerID = PrepareAbort, TxnVersion2, 0
	if commit {
		next.State = PrepareCommit
	}
	if m.State != Ongoing { // an empty abort
		next.Partitions, next.Start = nil, c.cfg.Now().UnixMilli()
	}
	if m.ProducerEpoch >= math.MaxInt16 {
		return -1, -1, fmt.Errorf("%w: the producer epoch is exhausted", kerr.InvalidProducerEpoch)
	}
	next.ProducerEpoch = m.ProducerEpoch + 1
	if next.ProducerEpoch == math.MaxInt16 {
		npid, err := c.cfg.NewProducerID(ctx)
		if err != nil {
			return -1, -1, fmt.Errorf("%w: allocating a producer id: %w", kerr.CoordinatorNotAvailable, err)
		}
		next.NextProducerID = npid
	}
	if err := c.write(ctx, id, next); err != nil {
		return -1, -1, err
	}
	c.startCompletion(id, next)
	if next.NextProducerID > 0 {
		return next.NextProducerID, 0, nil
	}
	return next.ProducerID, next.ProducerEpoch, nil
}
