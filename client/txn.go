package client

import (
	"context"
	"errors"
	"fmt"
)

// txnState is where a TransactionalID producer is in its transactions.
// Guarded by Producer.mu.
type txnState uint8

const (
	txnUninit txnState = iota // InitTransactions has not succeeded
	txnReady                  // no transaction open
	txnOpen                   // between BeginTransaction and its end
	txnEnding                 // CommitTransaction or AbortTransaction runs
)

// errNeedEpoch makes a transaction abortable: a batch's fate is unknown,
// so its sequences cannot be reused under the current epoch.
var errNeedEpoch = errors.New("client: a batch's fate is unknown: the producer needs a new epoch")

// InitTransactions gets the producer's identity from the transaction
// coordinator of its TransactionalID (FindCoordinator, then
// InitProducerID), retrying while the coordinator is moving, loading or
// finishing an earlier transaction, until ctx ends. The coordinator bumps
// the epoch, which fences every older producer with the same id and
// aborts its open transaction. Call it once, before BeginTransaction.
// PRODUCER_FENCED and TRANSACTIONAL_ID_AUTHORIZATION_FAILED are fatal.
func (p *Producer) InitTransactions(ctx context.Context) error {
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	p.mu.Lock()
	err := p.fatal
	if err == nil && p.closing {
		err = ErrClosed
	}
	if err == nil && (p.cfg.txnID == "" || p.txn != txnUninit) {
		err = fmt.Errorf("%w: InitTransactions is called once, on a producer with a TransactionalID", ErrTransactionState)
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	none := producerID{id: -1, epoch: -1}
	id, err := p.initTxnID(ctx, none)
	if err != nil {
		return p.failFatal(err, none)
	}
	p.mu.Lock()
	p.id, p.idState, p.txn = id, idReady, txnReady
	p.mu.Unlock()
	p.log.Debug("transactional producer ready", "producer_id", id.id, "epoch", id.epoch)
	p.wakeSender()
	return nil
}

// BeginTransaction opens a transaction: Produce is accepted until
// CommitTransaction or AbortTransaction. It does not contact a broker.
func (p *Producer) BeginTransaction() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.fatal != nil:
		return p.fatal
	case p.closing:
		return ErrClosed
	case p.txn != txnReady:
		return fmt.Errorf("%w: BeginTransaction needs InitTransactions and no open transaction", ErrTransactionState)
	}
	p.txn, p.txnErr = txnOpen, nil
	return nil
}

// CommitTransaction flushes the transaction's records and commits it
// (EndTxn). If a record, a partition or the offsets of the transaction
// failed, it returns an AbortableTxnError and the transaction stays open
// for AbortTransaction. If ctx ends, the transaction stays open (its
// outcome may be unknown if EndTxn was sent): call CommitTransaction
// again, or AbortTransaction. A FencedError is fatal.
func (p *Producer) CommitTransaction(ctx context.Context) error {
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	if err := p.enterEnd(false); err != nil {
		return err
	}
	err := p.Flush(ctx)
	if err == nil {
		err = p.waitTxnIdle(ctx)
	}
	if err != nil {
		p.leaveEnd()
		return err
	}
	p.mu.Lock()
	fatal, txnErr, added := p.fatal, p.txnErr, len(p.txnParts) > 0 || p.txnGroups
	p.mu.Unlock()
	switch {
	case fatal != nil:
		return fatal
	case txnErr != nil:
		p.leaveEnd()
		return &AbortableTxnError{Err: txnErr}
	}
	if added { // a transaction the coordinator never saw has nothing to end
		if err := p.endTxn(ctx, true); err != nil {
			return p.endFailed(err, ctx.Err() == nil)
		}
	}
	p.finishTxn()
	return nil
}

// AbortTransaction aborts the open transaction: records not yet sent fail
// with ErrTransactionAborted, it waits for those in flight, and ends the
// transaction (EndTxn abort; or, when a batch's fate is unknown, a new
// epoch from InitProducerID, which aborts it too). The producer is then
// ready for BeginTransaction. If ctx ends first, call it again.
func (p *Producer) AbortTransaction(ctx context.Context) error {
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	if err := p.enterEnd(true); err != nil {
		return err
	}
	p.wakeSender() // fail what is not sent yet
	if err := p.waitTxnIdle(ctx); err != nil {
		p.leaveEnd()
		return err
	}
	p.mu.Lock()
	fatal, bump, cur := p.fatal, p.needReset, p.id
	added, maybe := len(p.txnParts) > 0 || p.txnGroups, p.txnMaybe
	p.mu.Unlock()
	if fatal != nil {
		return fatal
	}
	var err error
	switch {
	case bump:
		var id producerID
		if id, err = p.initTxnID(ctx, cur); err == nil {
			p.mu.Lock()
			p.id = id
			p.resetSequencesLocked()
			p.mu.Unlock()
			p.log.Info("transaction aborted with a new epoch", "producer_id", id.id, "epoch", id.epoch)
		}
	case added || maybe:
		err = p.endTxn(ctx, false)
		if !added && errors.Is(err, ErrInvalidTxnState) {
			err = nil // the cancelled add never reached the coordinator
		}
	}
	if err != nil {
		return p.endFailed(err, false)
	}
	p.finishTxn()
	return nil
}

// enterEnd checks that a transaction is open and marks it ending. An
// abort marks it failed, so that the sender drops its unsent records, and
// stops adding partitions; a commit needs a transaction without failures.
func (p *Producer) enterEnd(abort bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.fatal != nil:
		return p.fatal
	case p.txn != txnOpen:
		return fmt.Errorf("%w: no open transaction to end", ErrTransactionState)
	case !abort && p.txnErr != nil:
		return &AbortableTxnError{Err: p.txnErr}
	}
	p.txn = txnEnding
	if abort {
		if p.txnErr == nil {
			p.txnErr = ErrTransactionAborted
		}
		if p.addCancel != nil {
			p.addCancel()
		}
	}
	return nil
}

// leaveEnd reopens a transaction whose end did not complete.
func (p *Producer) leaveEnd() {
	p.mu.Lock()
	if p.txn == txnEnding {
		p.txn = txnOpen
	}
	p.mu.Unlock()
}

// endFailed handles a failed EndTxn (or epoch bump): a fatal error ends
// the producer; otherwise the transaction stays open and, if abortable,
// may only abort (a commit whose ctx ended may be tried again instead).
func (p *Producer) endFailed(err error, abortable bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.txn == txnEnding {
		p.txn = txnOpen
	}
	if f := fatalTxnErr(err, p.id); f != nil {
		p.setFatalLocked(f)
		return f
	}
	if abortable {
		p.noteTxnErrLocked(err)
		return &AbortableTxnError{Err: err}
	}
	return err
}

// finishTxn returns to txnReady after a transaction ended.
func (p *Producer) finishTxn() {
	p.mu.Lock()
	p.txn, p.txnErr, p.txnGroups, p.txnMaybe = txnReady, nil, false, false
	clear(p.txnParts)
	p.mu.Unlock()
}

// waitTxnIdle waits until every record has its result and no
// AddPartitionsToTxn is running.
func (p *Producer) waitTxnIdle(ctx context.Context) error {
	for {
		p.mu.Lock()
		busy, idle, adding, addDone := p.records > 0, p.idle, p.adding, p.addDone
		p.mu.Unlock()
		var wait <-chan struct{}
		switch {
		case busy:
			wait = idle
		case adding:
			wait = addDone
		default:
			return nil
		}
		select {
		case <-wait: // look again: the other may have started
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// noteTxnErrLocked records the open transaction's first failure.
func (p *Producer) noteTxnErrLocked(err error) {
	if p.cfg.txnID != "" && p.txnErr == nil && p.fatal == nil && p.txn != txnReady {
		p.txnErr = err
	}
}

// txnFailLocked applies a failed transactional request: fatal errors end
// the producer, others make the transaction abortable.
func (p *Producer) txnFailLocked(err error) {
	if f := fatalTxnErr(err, p.id); f != nil {
		p.setFatalLocked(f)
		return
	}
	p.noteTxnErrLocked(err)
}

// failFatal makes the producer unusable if err is fatal, and returns the
// error the caller should see.
func (p *Producer) failFatal(err error, id producerID) error {
	f := fatalTxnErr(err, id)
	if f == nil {
		return err
	}
	p.mu.Lock()
	p.setFatalLocked(f)
	p.mu.Unlock()
	p.wakeSender()
	return f
}

// fatalTxnErr returns the fatal error err stands for, or nil: a newer
// producer took the transactional id (PRODUCER_FENCED,
// INVALID_PRODUCER_EPOCH), or it may not be used at all.
func fatalTxnErr(err error, id producerID) error {
	var fe *FencedError
	switch {
	case errors.As(err, &fe), errors.Is(err, ErrTransactionalIDAuth):
		return err
	case errors.Is(err, ErrInvalidProducerEpoch), errors.Is(err, ErrProducerFencedCode):
		return &FencedError{ProducerID: id.id, ProducerEpoch: id.epoch, Err: err}
	}
	return nil
}

// planTxnLocked is the transaction's part of a sender turn: a batch of
// unknown fate makes the transaction abortable, and a transaction that
// must abort sends nothing more; its unsent records fail at once.
func (p *Producer) planTxnLocked() {
	if p.needReset {
		p.noteTxnErrLocked(errNeedEpoch)
	}
	if p.txnErr == nil {
		return
	}
	err := error(&AbortableTxnError{Err: p.txnErr})
	if p.txnErr == ErrTransactionAborted {
		err = ErrTransactionAborted
	}
	for _, ps := range p.order {
		if len(ps.pending) > 0 {
			p.closePendingLocked(ps)
		}
		failed := false
		for _, b := range ps.queue {
			if !b.done && !b.inflight {
				p.failBatchLocked(b, err)
				failed = true
			}
		}
		if failed {
			p.popDoneLocked(ps)
		}
	}
}
