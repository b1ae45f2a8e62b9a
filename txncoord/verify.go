package txncoord

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// Verify answers a partition leader that received a transactional batch
// (KIP-890, AddPartitionsToTxn v4 with VerifyOnly): for each of parts, nil
// if it is in the ongoing transaction of id's producer pid at epoch, else
// INVALID_TXN_STATE, as Kafka 3.6 answers a partition that was not added.
// An error about the transaction itself is every part's:
// INVALID_PRODUCER_ID_MAPPING for an unknown id or another producer id,
// PRODUCER_FENCED for another epoch, CONCURRENT_TRANSACTIONS while its
// markers are being written.
//
// It reads the view as committed and does not wait for writes in flight:
// a partition counts once its addition is committed, which is before the
// producer hears that it was added.
func (c *Coordinator) Verify(id string, pid int64, epoch int16, parts []TopicPartition) []error {
	errs := make([]error, len(parts))
	m, err := c.verifyTxn(id, pid, epoch)
	for i, tp := range parts {
		switch {
		case err != nil:
			errs[i] = err
		case !m.has(tp):
			errs[i] = kerr.InvalidTxnState
		}
	}
	return errs
}

// verifyTxn is Verify's check of the transaction as a whole; an error is
// every partition's answer. Only an Ongoing transaction holds partitions
// (Kafka empties them when the transaction completes).
func (c *Coordinator) verifyTxn(id string, pid int64, epoch int16) (Metadata, error) {
	if c.isClosed() {
		return Metadata{}, kerr.NotCoordinator
	}
	m, err := c.check(id, pid, epoch)
	switch {
	case err != nil:
		return m, err
	case m.State == PrepareCommit || m.State == PrepareAbort:
		return m, kerr.ConcurrentTransactions
	case m.State != Ongoing:
		return m, kerr.InvalidTxnState
	}
	return m, nil
}
