package txncoord

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AddPartitions adds partitions to id's transaction, starting one if none
// is ongoing. It answers once the new partitions are committed; partitions
// already in the transaction write nothing. While the previous
// transaction's markers are being written it waits for them, up to
// Config.CompletionWait, then answers CONCURRENT_TRANSACTIONS. The caller
// checks that the partitions exist.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition) error {
	return c.addPartitions(ctx, id, pid, epoch, parts, 0)
}

// addPartitions is AddPartitions; a transaction it starts is of
// txnVersion (2 when a partition leader adds for transactions v2).
func (c *Coordinator) addPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition, txnVersion int16) error {
	comp := c.awaitCompletion(ctx, id)
	defer c.ids.lock(id)()
	defer c.leave(comp) // before the unlock: the completion then finds its Complete state written
	cur, ok := c.view.Txn(id)
	cur, pre := c.pendingComplete(id, comp, cur, ok)
	m, err := checkProducer(cur, ok, pid, epoch)
	if err != nil {
		return err
	}
	switch m.State {
	case PrepareCommit, PrepareAbort:
		c.startCompletion(id, m) // resumes one that gave up; a no-op while one runs
		return kerr.ConcurrentTransactions
	case Ongoing:
		if !slices.ContainsFunc(parts, func(tp TopicPartition) bool { return !m.has(tp) }) {
			return nil
		}
	default: // Empty, CompleteCommit, CompleteAbort: a new transaction
		m.Partitions, m.Start, m.TxnVersion = nil, c.cfg.Now().UnixMilli(), txnVersion
	}
	m.State = Ongoing
	m.Partitions = addParts(m.Partitions, parts)
	m.LastUpdate = c.cfg.Now().UnixMilli()
	if err := c.appendRecords(ctx, append(pre, MetadataRecord(id, m))); err != nil {
		return err
	}
	if pre != nil {
		c.finish(id, comp) // the previous transaction is complete: the next EndTxn may start its own
	}
	return nil
}

// abortLoop aborts the transactions past their timeout every
// AbortInterval, until the coordinator closes.
func (c *Coordinator) abortLoop() {
	defer c.wg.Done()
	for c.sleep(c.cfg.AbortInterval) {
		now := c.cfg.Now().UnixMilli()
		for _, id := range c.view.IDs() {
			m, ok := c.view.Txn(id)
			if ok && m.State == Ongoing && now-m.Start > int64(m.TimeoutMillis) {
				c.abortTimedOut(id, m)
			}
		}
	}
}

// abortTimedOut aborts id's transaction m, unless it changed since, with
// a bumped epoch that fences its producer (Kafka does the same).
func (c *Coordinator) abortTimedOut(id string, m Metadata) {
	defer c.ids.lock(id)()
	cur, ok := c.view.Txn(id)
	if !ok || cur.ProducerID != m.ProducerID || cur.ProducerEpoch != m.ProducerEpoch || cur.State != Ongoing {
		return
	}
	cur.ProducerEpoch, _ = bumped(cur.ProducerEpoch)
	cur.State = PrepareAbort
	if err := c.write(c.ctx, id, cur); err != nil {
		c.logger.Debug("txncoord: timed-out transaction not aborted yet", "transactional_id", id, "err", err)
		return
	}
	c.logger.Info("txncoord: aborting a timed-out transaction", "transactional_id", id,
		"producer_id", cur.ProducerID, "timeout_ms", cur.TimeoutMillis)
	c.startCompletion(id, cur)
}
