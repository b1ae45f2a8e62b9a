package txncoord

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactional id expiry (Kafka's transactional.id.expiration.ms): the
// leader decides with its clock which ids have been idle too long and
// writes their tombstones through the Log, so every replica's View forgets
// the same ids at the same log position. An id expires when no transaction
// of it is open (Empty, CompleteCommit or CompleteAbort, no markers being
// written) and its metadata was last written the expiration or longer
// ago. Its next InitProducerId starts afresh with a new producer id.

// expiryBatch bounds the ids one tombstone write covers (and whose locks
// it holds while it commits).
const expiryBatch = 100

// Tombstone is the record that deletes a transactional id's metadata.
func Tombstone(id string) Record {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	return Record{Key: k.AppendTo(nil)}
}

// expirable reports whether m may be forgotten at cutoff (milliseconds:
// now minus the expiration).
func expirable(m Metadata, cutoff int64) bool {
	switch m.State {
	case Empty, CompleteCommit, CompleteAbort:
		return m.LastUpdate <= cutoff
	}
	return false
}

// ExpireTransactionalIDs forgets the transactional ids idle for expiration
// at now (the leader's clock), as described above, and returns how many
// it removed, once their tombstones are committed; or the first write's
// error (NOT_COORDINATOR once closed), after which a later call redoes
// what is left.
func (c *Coordinator) ExpireTransactionalIDs(ctx context.Context, now time.Time, expiration time.Duration) (int, error) {
	cutoff := now.Add(-expiration).UnixMilli()
	var due []string
	for _, id := range c.view.IDs() {
		if m, ok := c.view.Txn(id); ok && expirable(m, cutoff) {
			due = append(due, id)
		}
	}
	removed := 0
	for len(due) > 0 {
		batch := due[:min(len(due), expiryBatch)]
		due = due[len(batch):]
		n, err := c.expireBatch(ctx, batch, cutoff)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	if removed > 0 {
		c.logger.Info("txncoord: transactional ids expired", "ids", removed)
	}
	return removed, nil
}

// expireBatch writes the tombstones of the ids of batch (sorted) that are
// still expirable under their locks, in one Append.
func (c *Coordinator) expireBatch(ctx context.Context, batch []string, cutoff int64) (int, error) {
	var recs []Record
	for _, id := range batch { // sorted: locks are taken in one order
		defer c.ids.lock(id)()
		if m, ok := c.view.Txn(id); ok && expirable(m, cutoff) && c.completion(id) == nil {
			recs = append(recs, Tombstone(id))
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	if err := c.appendRecords(ctx, recs); err != nil {
		return 0, err
	}
	return len(recs), nil
}
