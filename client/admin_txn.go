package client

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TransactionListing is one transactional id as ListTransactions shows
// it.
type TransactionListing struct {
	TransactionalID string
	ProducerID      int64
	State           string // Kafka's name: Empty, Ongoing, PrepareCommit, ...
	Coordinator     int32  // the broker that answered for it
}

// ListTransactions lists the transactional ids every broker coordinates,
// sorted by id; states, if given, keeps only those in one of them (e.g.
// "Ongoing").
func (a *Admin) ListTransactions(ctx context.Context, states ...string) ([]TransactionListing, error) {
	if err := a.retry(ctx, func() error { return a.cl.waitRefresh(ctx) }); err != nil {
		return nil, err
	}
	a.cl.mu.Lock()
	nodes := slices.Sorted(maps.Keys(a.cl.brokers))
	a.cl.mu.Unlock()
	var out []TransactionListing
	for _, node := range nodes {
		var r *kmsg.ListTransactionsResponse
		err := a.retry(ctx, func() error {
			rctx, cancel := context.WithTimeout(ctx, a.cfg.requestTimeout)
			defer cancel()
			req := kmsg.NewPtrListTransactionsRequest()
			req.StateFilters = states
			resp, err := a.cl.request(rctx, node, req, 0)
			if err != nil {
				return err
			}
			r = resp.(*kmsg.ListTransactionsResponse)
			return kafkaErr(r.ErrorCode, nil)
		})
		if err != nil {
			return nil, fmt.Errorf("list transactions of broker %d: %w", node, err)
		}
		for _, s := range r.TransactionStates {
			out = append(out, TransactionListing{TransactionalID: s.TransactionalID, ProducerID: s.ProducerID,
				State: s.TransactionState, Coordinator: node})
		}
	}
	slices.SortFunc(out, func(x, y TransactionListing) int { return cmp.Compare(x.TransactionalID, y.TransactionalID) })
	return out, nil
}
