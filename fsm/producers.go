package fsm

import (
	"context"
	"time"

	"github.com/minikafka/minikafka-go/producerstate"
)

// ActiveProducers returns a copy of every producer the partition's table
// holds, in ascending producer id order, for DescribeProducers. It is
// safe on any goroutine: it reads under tableMu, which the FSM goroutine
// holds while it applies, so a large table delays applying by the copy.
// It returns ctx's error if no apply lets it read before ctx ends.
func (f *FSM) ActiveProducers(ctx context.Context) ([]producerstate.Entry, error) {
	// An apply holds the table for a whole batch, and retries a write on a
	// full disk for as long as it lasts: wait for it only while ctx does.
	for !f.tableMu.TryRLock() {
		t := time.NewTimer(200 * time.Microsecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	defer f.tableMu.RUnlock()
	out := make([]producerstate.Entry, 0, f.table.Len())
	for e := range f.table.All() {
		out = append(out, e)
	}
	return out, nil
}
