package broker_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// The seed's hands-on lab over the wire, in-process: keyed records on
// `events` go to partition 0 in one batch; a hand-built batch (producer
// 77, epoch 0, sequence 0) gets offset 3; sending it again returns 3 with
// the high watermark still 4, also after the partition's leader is killed
// and after every node restarts. (test/e2e runs it again with real
// processes and kill -9.)
func TestSeedLabOverTheWire(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "events", 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	p, err := client.NewProducer(client.Brokers(c.Seeds()...), client.BatchSize(4096), client.Linger(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		partition int32
		offset    int64
		err       error
	}
	results := make(chan result, 3)
	for _, v := range []string{"0", "1", "2"} {
		err := p.Produce(ctx, &client.Record{Topic: "events", Key: []byte("same"), Value: []byte(v)},
			func(r *client.Record, err error) { results <- result{r.Partition, r.Offset, err} })
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close(ctx)
	for i := range 3 {
		r := <-results
		if r.err != nil || r.partition != 0 || r.offset != int64(i) {
			t.Fatalf("keyed record %d: partition %d offset %d err %v; want partition 0 offset %d", i, r.partition, r.offset, r.err, i)
		}
	}
	leader0, _ := c.Leader("events", 0, 10*time.Second)
	if n := batchesIn(t, ctx, cl.Broker(int(leader0)), "events", 0); n != 1 {
		t.Fatalf("partition 0 holds %d batches, want the 3 keyed records in 1", n)
	}

	lab := batchFor(t, 77, 0, 0, "once")
	check := func(when string) {
		t.Helper()
		resp := produceRaw(t, ctx, cl, "events", lab, -1)
		if resp.ErrorCode != 0 || resp.BaseOffset != 3 {
			t.Fatalf("%s: hand-built batch got offset %d code %d, want 3", when, resp.BaseOffset, resp.ErrorCode)
		}
		if hw := highWatermark(t, ctx, cl, "events", 0); hw != 4 {
			t.Fatalf("%s: high watermark %d, want 4", when, hw)
		}
	}
	check("first send")
	check("exact retry")

	leader, _ := c.Leader("events", 0, 10*time.Second)
	c.HaltNode(int(leader))
	cl = c.Client(t) // a client that knows only the survivors
	check("retry after the leader was killed")

	c.StartNode(int(leader))
	for id := 1; id <= 3; id++ {
		c.StopNode(id)
	}
	for id := 1; id <= 3; id++ {
		c.StartNode(id)
	}
	c.WaitReady()
	cl = c.Client(t)
	check("retry after restarting every node")
}

func highWatermark(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, p int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	for {
		resp, err := req.RequestWith(ctx, cl)
		// kgo's metadata may have no leader yet, or still name a halted
		// one that cannot be dialled: ask again.
		if (errors.Is(err, kerr.LeaderNotAvailable) || errors.Is(err, syscall.ECONNREFUSED)) && ctx.Err() == nil {
			// kgo's metadata has no leader yet (a Produce v10+ learns the
			// leader from its answer, without refreshing it): ask again.
			cl.ForceMetadataRefresh()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		r := resp.Topics[0].Partitions[0]
		if r.ErrorCode == 0 {
			return r.Offset
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ListOffsets: code %d", r.ErrorCode)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// batchesIn counts the stored batches of a partition by fetching it whole.
func batchesIn(t *testing.T, ctx context.Context, leader *kgo.Broker, topic string, p int32) int {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 100, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, 0, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := testcluster.NameTopicsByID(ctx, leader, req); err != nil {
		t.Fatal(err)
	}
	kresp, err := leader.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("fetch from the leader: code %d", code)
	}
	n := 0
	for b := resp.Topics[0].Partitions[0].RecordBatches; len(b) > 0; n++ {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		b = b[12+rb.Length:]
	}
	return n
}
