package kafkabackend

import (
	"context"

	"github.com/minikafka/minikafka-go/kafkaapi"
)

var _ kafkaapi.ProducerStates = replicaPartition{}

// ActiveProducers is the replica's producer table as it has applied it;
// a producer's last sequence is that of its last retained batch.
func (p replicaPartition) ActiveProducers(ctx context.Context) ([]kafkaapi.ActiveProducer, error) {
	entries, err := p.r.ActiveProducers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]kafkaapi.ActiveProducer, len(entries))
	for i, e := range entries {
		last := int32(-1)
		if n := len(e.Batches); n > 0 {
			last = e.Batches[n-1].LastSeq
		}
		out[i] = kafkaapi.ActiveProducer{ProducerID: e.ProducerID, ProducerEpoch: e.Epoch, LastSequence: last,
			LastTimestamp: e.LastTimestamp, CoordinatorEpoch: e.CoordinatorEpoch, TxnStartOffset: e.TxnFirstOffset}
	}
	return out, nil
}
