package targets

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Franz produces with franz-go's kgo client: idempotent and acks=all (its
// defaults), default batching (linger 10ms, batches up to ~1 MB). Three
// settings differ from its defaults: no compression (its default is
// snappy; our client's is none, and the same bytes should go over the
// wire), MaxBufferedRecords raised so that only the bench's window bounds
// what is outstanding, and the manual partitioner, so that each record
// goes to the partition the bench picks.
type Franz struct {
	cl    *kgo.Client
	topic string
}

// NewFranz creates the client; extra options go after the bench's own.
func NewFranz(brokers []string, topic string, window int, extra ...kgo.Opt) (*Franz, error) {
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("kgo-bench"),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(window + 1024),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &Franz{cl: cl, topic: topic}, nil
}

// Send produces one keyless record to partition. kgo's Produce only blocks
// when its buffer is full, which the window prevents.
func (t *Franz) Send(ctx context.Context, partition int, value []byte, done func(error)) error {
	t.cl.Produce(ctx, &kgo.Record{Topic: t.topic, Value: value, Partition: int32(partition)},
		func(_ *kgo.Record, err error) { done(err) })
	return nil
}

// Close flushes and closes the client.
func (t *Franz) Close(ctx context.Context) error {
	err := t.cl.Flush(ctx)
	t.cl.Close()
	return err
}
