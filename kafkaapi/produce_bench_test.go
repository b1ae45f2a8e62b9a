package kafkaapi

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/record"
)

// BenchmarkProduceOne measures the front end's work for one partition of a
// Produce (checks, then Partition.Produce on a fake partition that commits
// at once), without the network.
func BenchmarkProduceOne(b *testing.B) {
	for _, shape := range []struct{ records, size int }{{1, 1000}, {100, 100}, {1000, 10}} {
		for _, codec := range []int{record.CompressionNone, record.CompressionLZ4} {
			recs := make([]record.Record, shape.records)
			for i := range recs {
				recs[i] = record.Record{Timestamp: int64(i), Value: bytes.Repeat([]byte{byte(i)}, shape.size)}
			}
			batch, err := record.AppendBatch(nil, record.PlainBatch(codec), recs)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%dx%dB/%s", shape.records, shape.size, record.CodecName(codec)), func(b *testing.B) {
				fb := newFakeBackend("127.0.0.1", 9092)
				fb.addTopic("t", 1)
				srv, err := New(fb, Config{Logger: logging.Discard()})
				if err != nil {
					b.Fatal(err)
				}
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Records = batch // the fake log keeps the same slice each time
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				for b.Loop() {
					p, _, err := srv.checkBatch("t", &rp)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p.Produce(rp.Records)(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
