package partition

import (
	"context"

	"github.com/minikafka/minikafka-go/producerstate"
)

// ActiveProducers is the replica's producer state as it has applied it,
// in ascending producer id order (fsm.FSM.ActiveProducers).
func (r *Replica) ActiveProducers(ctx context.Context) ([]producerstate.Entry, error) {
	return r.fsm.ActiveProducers(ctx)
}
