package client

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduce produces the same records through our producer and
// through franz-go's against the same kfake cluster: idempotent, acks=all,
// default batching, no compression, one Flush at the end; values of
// 100 B and 1 KiB.
func BenchmarkProduce(b *testing.B) {
	kc := newKfake(b, 1, 3, "bench")
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) { benchProduce(b, kc.ListenAddrs(), make([]byte, size)) })
	}
}

func benchProduce(b *testing.B, addrs []string, value []byte) {
	ctx := context.Background()
	b.Run("minikafka", func(b *testing.B) {
		p, err := NewProducer(Brokers(addrs...), BlockOnBufferFull())
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
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic("bench"),
			kgo.ProducerBatchCompression(kgo.NoCompression())) // ours does not compress by default
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
