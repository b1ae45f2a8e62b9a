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
