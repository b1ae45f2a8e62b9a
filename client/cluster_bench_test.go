package client_test

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/record"
)

// BenchmarkProduceCluster produces the same records (keyless, 1 KiB of
// random bytes) through our producer and through franz-go's, each with
// its default batching, acks=all, idempotence and no compression, to its own 3-partition topic
// (replication 3) of one in-process 3-node cluster. It counts from the
// first Produce to the end of the final Flush, and reports the records per
// batch that reached the log ("recs/batch"): each batch is one Raft entry
// and one round of fsyncs, so that is what throughput follows.
//
//	go test -run XXX -bench ProduceCluster -benchtime 20000x ./client/
//
// It loops to b.N rather than with b.Loop, because the final Flush must be
// measured and b.Loop stops the timer when it returns false.
func BenchmarkProduceCluster(b *testing.B) {
	c := startCluster(b, map[string]int32{"bench-ours": 3, "bench-kgo": 3})
	seeds := c.Seeds()
	// Random bytes: franz-go compresses with snappy by default and ours
	// does not, so a repetitive value would measure compression, not the
	// producer. Both run uncompressed.
	value := make([]byte, 1024)
	rand.NewChaCha8([32]byte{1}).Read(value)
	ctx := context.Background()

	b.Run("ours", func(b *testing.B) {
		p, err := client.NewProducer(client.Brokers(seeds...), client.BlockOnBufferFull())
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		// Producer id, metadata and connections before the clock starts.
		if err := p.ProduceSync(ctx, &client.Record{Topic: "bench-ours", Value: value}); err != nil {
			b.Fatal(err)
		}
		var failed atomic.Int64
		promise := func(_ *client.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		}
		b.SetBytes(int64(len(value)))
		b.ResetTimer()
		for range b.N {
			if err := p.Produce(ctx, &client.Record{Topic: "bench-ours", Value: value}, promise); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if n := failed.Load(); n > 0 {
			b.Fatalf("%d records failed", n)
		}
		reportBatching(b, c, "bench-ours", 3)
	})

	b.Run("franz-go", func(b *testing.B) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("bench-kgo"),
			kgo.RequiredAcks(kgo.AllISRAcks()), // idempotent by default
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		var failed atomic.Int64
		promise := func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		}
		b.SetBytes(int64(len(value)))
		b.ResetTimer()
		for range b.N {
			cl.Produce(ctx, &kgo.Record{Value: value}, promise)
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if n := failed.Load(); n > 0 {
			b.Fatalf("%d records failed", n)
		}
		reportBatching(b, c, "bench-kgo", 3)
	})
}

// reportBatching reads the topic's batch headers from the partition
// leaders and reports the mean records per batch, over the topic's whole
// log (earlier runs of the same sub-benchmark included).
func reportBatching(b *testing.B, c *testcluster.Cluster, topic string, parts int32) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	batches, recs := 0, 0
	for part := range parts {
		leader, _ := c.Leader(topic, part, 10*time.Second)
		for off := int64(0); ; {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 16<<20, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = part, off, 16<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			if err := testcluster.NameTopicsByID(ctx, cl.Broker(int(leader)), req); err != nil {
				b.Fatal(err)
			}
			resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
			if err != nil {
				b.Fatal(err)
			}
			fp := resp.Topics[0].Partitions[0]
			if fp.ErrorCode != 0 {
				b.Fatalf("fetch %s[%d] from %d: error %d", topic, part, leader, fp.ErrorCode)
			}
			start := off
			for rest := fp.RecordBatches; len(rest) > 0; {
				_, next, h, err := record.Next(rest)
				if err != nil {
					break // a batch cut off at the byte limit: fetched again next time
				}
				batches++
				recs += int(h.NumRecords)
				off, rest = h.NextOffset(), next
			}
			if off >= fp.HighWatermark || off == start {
				break
			}
		}
	}
	if batches > 0 {
		b.ReportMetric(float64(recs)/float64(batches), "recs/batch")
	}
}
