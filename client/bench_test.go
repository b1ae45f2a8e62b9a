package client

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduce produces the same records through our producer and
// through franz-go's against the same kfake cluster: idempotent, acks=all,
// default batching, one Flush at the end.
func BenchmarkProduce(b *testing.B) {
	kc := newKfake(b, 1, 3, "bench")
	value := make([]byte, 100)
	ctx := context.Background()

	b.Run("minikafka", func(b *testing.B) {
		p, err := NewProducer(Brokers(kc.ListenAddrs()...), BlockOnBufferFull())
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			if err := p.Produce(ctx, &Record{Topic: "bench", Value: value}, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("franz-go", func(b *testing.B) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.DefaultProduceTopic("bench"))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			cl.Produce(ctx, &kgo.Record{Value: value}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	})
}
