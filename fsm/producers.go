package fsm

import "github.com/minikafka/minikafka-go/producerstate"

// ActiveProducers returns a copy of every producer the partition's table
// holds, in ascending producer id order, for DescribeProducers. It is
// safe on any goroutine: it reads under tableMu, which the FSM goroutine
// holds while it applies, so a large table delays applying by the copy.
func (f *FSM) ActiveProducers() []producerstate.Entry {
	f.tableMu.RLock()
	defer f.tableMu.RUnlock()
	out := make([]producerstate.Entry, 0, f.table.Len())
	for e := range f.table.All() {
		out = append(out, e)
	}
	return out
}
