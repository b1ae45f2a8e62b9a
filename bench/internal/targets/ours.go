package targets

import (
	"context"
	"errors"

	"github.com/minikafka/minikafka-go/client"
)

// Ours produces with our client package: idempotent, acks=all (the
// defaults), default batching (BatchSize 1 MiB, Linger 5ms), no
// compression. Each record goes to the partition the bench picks
// (ExplicitPartition). The buffer is raised to 1 GiB and blocks rather than fails
// when full, so that only the bench's window bounds what is outstanding.
type Ours struct {
	p     *client.Producer
	topic string
}

// NewOurs creates the producer; extra options go after the bench's own.
func NewOurs(brokers []string, topic string, extra ...client.Opt) (*Ours, error) {
	opts := append([]client.Opt{
		client.Brokers(brokers...),
		client.ClientID("minikafka-bench"),
		client.BufferLimit(1 << 30),
		client.BlockOnBufferFull(),
	}, extra...)
	p, err := client.NewProducer(opts...)
	if err != nil {
		return nil, err
	}
	return &Ours{p: p, topic: topic}, nil
}

// Send produces one keyless record to partition.
func (o *Ours) Send(ctx context.Context, partition int, value []byte, done func(error)) error {
	return o.p.Produce(ctx, &client.Record{Topic: o.topic, Value: value, Partition: int32(partition), ExplicitPartition: true},
		func(_ *client.Record, err error) { done(err) })
}

// Close flushes and closes the producer.
func (o *Ours) Close(ctx context.Context) error {
	return errors.Join(o.p.Flush(ctx), o.p.Close(ctx))
}
