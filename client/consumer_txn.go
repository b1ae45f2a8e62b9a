package client

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// abortedFilter drops the batches of aborted transactions from one
// partition's fetch, as Kafka's consumer does under read_committed. The
// broker lists each aborted transaction that overlaps the fetch by its
// producer id and first offset. Walking the batches in offset order, a
// transaction becomes active once a batch reaches its first offset; from
// then on that producer's transactional batches are dropped, until its
// ABORT marker.
type abortedFilter struct {
	pending []kmsg.FetchResponseTopicPartitionAbortedTransaction // by first offset, not yet active
	active  map[int64]bool                                       // producers inside an aborted transaction
}

// newAbortedFilter makes a filter from a fetch response's list.
func newAbortedFilter(list []kmsg.FetchResponseTopicPartitionAbortedTransaction) *abortedFilter {
	pending := slices.Clone(list)
	slices.SortStableFunc(pending, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		switch {
		case a.FirstOffset < b.FirstOffset:
			return -1
		case a.FirstOffset > b.FirstOffset:
			return 1
		}
		return 0
	})
	return &abortedFilter{pending: pending, active: map[int64]bool{}}
}

// skip reports whether a batch belongs to an aborted transaction, and
// moves the filter past it. Call it for every batch, in offset order. A
// nil filter (ReadUncommitted) skips nothing.
func (f *abortedFilter) skip(h record.Header, batch []byte) bool {
	if f == nil {
		return false
	}
	last := h.NextOffset() - 1
	for len(f.pending) > 0 && f.pending[0].FirstOffset <= last {
		f.active[f.pending[0].ProducerID] = true
		f.pending = f.pending[1:]
	}
	if !h.IsTransactional() || !f.active[h.ProducerID] {
		return false
	}
	if h.IsControl() {
		if m, err := record.ParseEndTxnMarker(batch); err == nil && m.Type == record.ControlAbort {
			delete(f.active, h.ProducerID)
		}
	}
	return true
}
