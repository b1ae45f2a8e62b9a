package txncoord

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// InitProducerID gives id's producer its identity: a new producer id (epoch
// 0) the first time, else the same producer id with the epoch bumped,
// which fences every older instance. A transaction still ongoing is
// aborted first (with a bumped epoch, its markers written), while one
// whose markers are being written is CONCURRENT_TRANSACTIONS, or
// NOT_COORDINATOR once the coordinator closes meanwhile. pid and
// epoch, if not -1, are the caller's current identity (KIP-360): it must
// be id's current one, else PRODUCER_FENCED. A timeout past
// Config.MaxTimeout is INVALID_TRANSACTION_TIMEOUT.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeout time.Duration, pid int64, epoch int16) (int64, int16, error) {
	if timeout <= 0 || timeout > c.cfg.MaxTimeout {
		return -1, -1, fmt.Errorf("%w: %v is not in (0, %v]", kerr.InvalidTransactionTimeout, timeout, c.cfg.MaxTimeout)
	}
	for {
		if c.isClosed() { // the Prepare state's completion ended with the coordinator: no retry can end it
			return -1, -1, fmt.Errorf("%w: the coordinator is closing", kerr.NotCoordinator)
		}
		if done := c.completion(id); done != nil {
			select {
			case <-done:
			case <-ctx.Done():
				return -1, -1, kerr.ConcurrentTransactions
			}
		}
		npid, nepoch, retry, err := c.initOnce(ctx, id, timeout, pid, epoch)
		if !retry {
			return npid, nepoch, err
		}
	}
}

// initOnce is one attempt of InitProducerID; retry means an ongoing
// transaction is being aborted first.
func (c *Coordinator) initOnce(ctx context.Context, id string, timeout time.Duration, pid int64, epoch int16) (int64, int16, bool, error) {
	defer c.ids.lock(id)()
	m, ok := c.view.Txn(id)
	if ok && pid >= 0 && (pid != m.ProducerID || epoch != m.ProducerEpoch) {
		return -1, -1, false, kerr.ProducerFenced
	}
	switch {
	case ok && (m.State == PrepareCommit || m.State == PrepareAbort):
		if c.completion(id) == nil {
			c.startCompletion(id, m) // a failed completion: try again
		}
		return -1, -1, true, nil
	case ok && m.State == Ongoing:
		m.ProducerEpoch, _ = bumped(m.ProducerEpoch) // fence the producer of the aborted transaction
		m.State = PrepareAbort
		if err := c.write(ctx, id, m); err != nil {
			return -1, -1, false, err
		}
		c.startCompletion(id, m)
		return -1, -1, true, nil
	}
	next := Metadata{ProducerID: m.ProducerID, TimeoutMillis: int32(timeout.Milliseconds()), State: Empty, Start: -1}
	var fresh bool
	next.ProducerEpoch, fresh = bumped(m.ProducerEpoch)
	if !ok || !fresh {
		npid, err := c.cfg.NewProducerID(ctx)
		if err != nil {
			return -1, -1, false, fmt.Errorf("%w: allocating a producer id: %w", kerr.CoordinatorNotAvailable, err)
		}
		next.ProducerID, next.ProducerEpoch = npid, 0
	}
	if err := c.write(ctx, id, next); err != nil {
		return -1, -1, false, err
	}
	return next.ProducerID, next.ProducerEpoch, false, nil
}
