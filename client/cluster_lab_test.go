package client_test

import (
	"context"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/record"
)

// The seed's hands-on lab through our client, on a real 3-node cluster:
// topic events (2 partitions, replication 3); three sends with key "same",
// with a batch size and linger large enough to hold them in one batch, then
// Flush: all three land on partition 0 (crc32("same") % 2), at offsets 0,
// 1 and 2, in one batch in the log.
func TestClusterSeedLab(t *testing.T) {
	if crc32.ChecksumIEEE([]byte("same"))%2 != 0 {
		t.Fatal("the lab assumes crc32(\"same\") % 2 == 0")
	}
	c := startCluster(t, map[string]int32{"events": 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	p, err := client.NewProducer(client.Brokers(c.Seeds()...), client.BatchSize(1<<20), client.Linger(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	type result struct {
		partition int32
		offset    int64
		err       error
	}
	results := make(chan result, 3)
	for _, v := range []string{"v0", "v1", "v2"} {
		err := p.Produce(ctx, &client.Record{Topic: "events", Key: []byte("same"), Value: []byte(v)},
			func(r *client.Record, err error) { results <- result{r.Partition, r.Offset, err} })
		if err != nil {
			t.Fatal(err)
		}
	}
	// With a 10s linger nothing is sent before Flush.
	select {
	case r := <-results:
		t.Fatalf("a record completed before Flush: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r := <-results
		if r.err != nil || r.partition != 0 || r.offset != int64(i) {
			t.Fatalf("send %d: partition %d offset %d err %v; want partition 0 offset %d", i, r.partition, r.offset, r.err, i)
		}
	}

	// The log of partition 0 holds one batch of three records.
	leader, _ := c.Leader("events", 0, 10*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "events"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := testcluster.NameTopicsByID(ctx, cl.Broker(int(leader)), req); err != nil {
		t.Fatal(err)
	}
	resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
	if err != nil {
		t.Fatal(err)
	}
	fp := resp.Topics[0].Partitions[0]
	if fp.ErrorCode != 0 || fp.HighWatermark != 3 {
		t.Fatalf("fetch from leader %d: error %d, high watermark %d; want 0 and 3", leader, fp.ErrorCode, fp.HighWatermark)
	}
	var batches []record.Header
	for b := fp.RecordBatches; len(b) > 0; {
		_, rest, h, err := record.Next(b)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, h)
		b = rest
	}
	if len(batches) != 1 || batches[0].BaseOffset != 0 || batches[0].NumRecords != 3 || !batches[0].Idempotent() {
		t.Fatalf("partition 0 holds batches %+v; want one idempotent batch of 3 records at offset 0", batches)
	}
}
