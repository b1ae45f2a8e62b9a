package txncoord

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransaction answers one transactional id of a
// DescribeTransactions: TRANSACTIONAL_ID_NOT_FOUND if the view has none.
func (c *Coordinator) DescribeTransaction(id string) kmsg.DescribeTransactionsResponseTransactionState {
	out := kmsg.NewDescribeTransactionsResponseTransactionState()
	out.TransactionalID, out.ProducerID, out.ProducerEpoch, out.StartTimestamp = id, -1, -1, -1
	if c.isClosed() {
		out.ErrorCode = kerr.NotCoordinator.Code
		return out
	}
	m, ok := c.view.Txn(id)
	if !ok {
		out.ErrorCode = kerr.TransactionalIDNotFound.Code
		return out
	}
	out.State, out.TimeoutMillis, out.StartTimestamp = m.State.String(), m.TimeoutMillis, m.Start
	out.ProducerID, out.ProducerEpoch = m.ProducerID, m.ProducerEpoch
	for _, tp := range m.Partitions {
		if n := len(out.Topics); n > 0 && out.Topics[n-1].Topic == tp.Topic {
			out.Topics[n-1].Partitions = append(out.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
		t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
		out.Topics = append(out.Topics, t)
	}
	return out
}

// ListTransactions lists the coordinator's transactional ids, sorted,
// keeping those whose state is in states and producer id in pids (an
// empty filter keeps all), and with minDurationMillis >= 0 those whose
// transaction started at least that long ago by the leader's clock (as
// Kafka compares it: a start of -1 is long ago).
func (c *Coordinator) ListTransactions(states []string, pids []int64, minDurationMillis int64) []kmsg.ListTransactionsResponseTransactionState {
	var out []kmsg.ListTransactionsResponseTransactionState
	now := c.cfg.Now().UnixMilli()
	for _, id := range c.view.IDs() {
		m, ok := c.view.Txn(id)
		switch {
		case !ok:
			continue
		case len(states) > 0 && !slices.Contains(states, m.State.String()):
			continue
		case len(pids) > 0 && !slices.Contains(pids, m.ProducerID):
			continue
		case minDurationMillis >= 0 && now-m.Start < minDurationMillis:
			continue
		}
		s := kmsg.NewListTransactionsResponseTransactionState()
		s.TransactionalID, s.ProducerID, s.TransactionState = id, m.ProducerID, m.State.String()
		out = append(out, s)
	}
	return out
}
