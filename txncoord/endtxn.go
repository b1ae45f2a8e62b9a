package txncoord

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// EndTxn ends the ongoing transaction of id: it writes PrepareCommit (or
// PrepareAbort) and answers once that is committed; the markers follow in
// the background, then CompleteCommit (or CompleteAbort). A retry of an
// EndTxn that was accepted is answered as the original was, or
// CONCURRENT_TRANSACTIONS while its markers are being written.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) error {
	defer c.ids.lock(id)()
	m, err := c.check(id, pid, epoch)
	if err != nil {
		return err
	}
	switch {
	case m.State == Ongoing:
		m.State, m.TxnVersion = PrepareAbort, 0
		if commit {
			m.State = PrepareCommit
		}
		if err := c.write(ctx, id, m); err != nil {
			return err
		}
		c.startCompletion(id, m)
		return nil
	case m.State == PrepareCommit && commit, m.State == PrepareAbort && !commit:
		c.startCompletion(id, m) // resumes one that gave up; a no-op while one runs
		return kerr.ConcurrentTransactions
	case m.State == CompleteCommit && commit, m.State == CompleteAbort && !commit:
		return nil // a retry of what already happened
	}
	return kerr.InvalidTxnState
}

// startCompletion starts writing the markers of m, a transaction in a
// Prepare state, unless that is under way. Call with id's lock held.
func (c *Coordinator) startCompletion(id string, m Metadata) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.completing[id] != nil {
		return
	}
	done := make(chan struct{})
	c.completing[id] = done
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.complete(id, m)
		c.mu.Lock()
		delete(c.completing, id)
		c.mu.Unlock()
		close(done)
	}()
}

// complete writes m's markers, retrying until every partition has one or
// the coordinator closes, then writes the Complete state, retrying that
// too: a transaction left in a Prepare state would answer every request
// of its producer CONCURRENT_TRANSACTIONS until the coordinator moved.
func (c *Coordinator) complete(id string, m Metadata) {
	mk := Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, CoordinatorEpoch: c.epoch,
		Commit: m.State == PrepareCommit, TxnVersion: m.TxnVersion}
	attempt := 1
	for ; ; attempt++ {
		err := c.markers.WriteMarkers(c.ctx, mk, m.Partitions)
		if err == nil {
			break
		}
		if attempt == 1 || attempt%20 == 0 { // once, then every ~2 s: a stuck completion shows in the log
			c.logger.Info("txncoord: markers not written yet", "transactional_id", id, "attempt", attempt, "err", err)
		}
		if !c.sleep(c.cfg.MarkerRetry) {
			return
		}
	}
	if attempt > 1 {
		c.logger.Info("txncoord: markers written", "transactional_id", id, "attempts", attempt)
	}
	for attempt := 1; ; attempt++ {
		done, err := c.writeComplete(id, m)
		if done {
			return
		}
		if attempt == 1 || attempt%20 == 0 {
			c.logger.Warn("txncoord: markers written, the Complete state not yet", "transactional_id", id, "attempt", attempt, "err", err)
		}
		if !c.sleep(c.cfg.MarkerRetry) {
			return
		}
	}
}

// writeComplete records that m's markers are written; done is false when
// that should be tried again.
func (c *Coordinator) writeComplete(id string, m Metadata) (done bool, err error) {
	defer c.ids.lock(id)()
	cur, ok := c.view.Txn(id)
	if !ok || cur.ProducerID != m.ProducerID || cur.ProducerEpoch != m.ProducerEpoch || cur.State != m.State {
		return true, nil // changed meanwhile; nothing of this transaction is left to record
	}
	cur.State, cur.Partitions = CompleteAbort, nil
	if m.State == PrepareCommit {
		cur.State = CompleteCommit
	}
	if cur.NextProducerID > 0 { // the epoch overflowed: the producer goes on under a new id
		cur.PrevProducerID, cur.ProducerID, cur.ProducerEpoch, cur.NextProducerID = cur.ProducerID, cur.NextProducerID, 0, 0
	}
	if err := c.write(c.ctx, id, cur); err != nil {
		return false, err
	}
	return true, nil
}
