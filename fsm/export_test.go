package fsm

import "github.com/minikafka/minikafka-go/producerstate"

// Producers returns a copy of the producer table.
func (f *FSM) Producers() *producerstate.Table { return f.table.Clone() }
