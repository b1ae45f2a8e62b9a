package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/record"
)

// labProducer is the seed's hand-built producer id.
const labProducer = 77

// labRequest is the seed's hand-built Produce request: one batch of one
// record from producer 77, epoch 0, sequence 0, to events[0].
func labRequest(t *testing.T, value []byte) *kmsg.ProduceRequest {
	t.Helper()
	batch, err := record.AppendBatch(nil, record.BatchOptions{
		ProducerID: labProducer, ProducerEpoch: 0, BaseSequence: 0, Compression: record.CompressionNone,
	}, []record.Record{{Timestamp: 1_700_000_000_000, Key: []byte("lab"), Value: value}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	req.TimeoutMillis = 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "events"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// sendLab sends the hand-built request to events[0]'s leader and checks
// that it is answered with offset 3 and that the high watermark is 4.
func sendLab(ctx context.Context, t *testing.T, c *Cluster, req *kmsg.ProduceRequest, when string) {
	t.Helper()
	l, err := c.Leader(ctx, "events", 0)
	must(t, err)
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := Request(rctx, c.Node(l.Node).KafkaAddr, req)
	if err != nil {
		t.Fatalf("%s: produce to node %d: %v", when, l.Node, err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("%s: malformed produce response %+v", when, pr)
	}
	p := pr.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("%s: producer 77 seq 0 answered offset %d, error %d; want offset 3, no error", when, p.BaseOffset, p.ErrorCode)
	}
	start, end, err := c.Offsets(ctx, l.Node, "events", 0)
	must(t, err)
	if start != 0 || end != 4 {
		t.Fatalf("%s: events[0] offsets [%d, %d), want [0, 4)", when, start, end)
	}
	t.Logf("%s: producer 77 seq 0 -> offset 3 (leader %d, epoch %d), high watermark 4", when, l.Node, l.Epoch)
}

// TestSeedLab is the seed chapter's hands-on lab on a real three-process
// cluster: topic events (2 partitions, replication 3); three sends with
// key "same" land on partition 0 at offsets 0-2 in one batch; a
// hand-built batch (producer 77, epoch 0, sequence 0) gets offset 3;
// sending it again returns 3 with the high watermark still 4; so it does
// after kill -9 of the partition's leader, after restarting all three
// nodes, after killing all three at once, and after a rolling restart.
// Then every replica's log is identical.
func TestSeedLab(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	c := startCluster(ctx, t)
	must(t, c.CreateTopic(ctx, "events", 2, 3))
	var h History

	// Three sends with key "same", in one batch: a long linger and a
	// Flush close them together.
	p, err := client.NewProducer(append(ProducerOpts(c.Seeds()), client.Linger(time.Minute))...)
	must(t, err)
	recs := make([]*client.Record, 3)
	idx := make([]int, 3)
	for i := range recs {
		id := ID{Producer: 0, Key: "same", Seq: int64(i)}
		recs[i] = &client.Record{Topic: "events", Key: []byte("same"), Value: id.Value(0)}
		idx[i] = h.Begin(id, "events")
		must(t, p.Produce(ctx, recs[i], func(r *client.Record, err error) {
			if err != nil {
				t.Errorf("send %d: %v", i, err)
			}
		}))
	}
	must(t, p.Flush(ctx))
	must(t, p.Close(ctx))
	for i, r := range recs {
		if r.Partition != 0 || r.Offset != int64(i) {
			t.Fatalf("send %d with key same: partition %d offset %d, want partition 0 offset %d", i, r.Partition, r.Offset, i)
		}
		h.Place(idx[i], r.Partition)
		h.Ack(idx[i], r.Partition, r.Offset, time.Now())
	}
	logs, err := c.ReadPartitions(ctx, "events")
	must(t, err)
	stored := readBatches(ctx, t, c, "events", 0)
	if len(stored) != 1 || stored[0].BaseOffset != 0 || stored[0].Count() != 3 {
		t.Fatalf("events[0] batches %+v, want one batch of 3 records at offset 0", stored)
	}
	if len(logs[1].Records) != 0 {
		t.Fatalf("events[1] holds %d records, want none", len(logs[1].Records))
	}

	labID := ID{Producer: labProducer, Key: "lab", Seq: 0}
	req := labRequest(t, labID.Value(0))
	sendLab(ctx, t, c, req, "first send")
	h.Add(Attempt{ID: labID, Topic: "events", Partition: 0, Outcome: Acked, Offset: 3, Sent: time.Now(), Done: time.Now()})
	sendLab(ctx, t, c, req, "same request again")

	l, err := c.Leader(ctx, "events", 0)
	must(t, err)
	must(t, c.Kill(l.Node))
	sendLab(ctx, t, c, req, "after kill -9 of the leader")
	must(t, c.StartNode(ctx, l.Node))
	must(t, c.WaitReady(ctx, "events"))

	stop, cancel := context.WithTimeout(ctx, time.Minute)
	must(t, c.StopAll(stop))
	cancel()
	must(t, c.StartAll(ctx, "events"))
	sendLab(ctx, t, c, req, "after restarting all three nodes")
	must(t, c.KillAll())
	must(t, c.StartAll(ctx, "events"))
	sendLab(ctx, t, c, req, "after kill -9 of all three nodes")
	must(t, c.RollingRestart(ctx, "events"))
	sendLab(ctx, t, c, req, "after a rolling restart")

	sum := scenarioSummary(t)
	v := verify(ctx, t, c, &h, sum, "events")
	if v.Report.Stored != 4 {
		t.Fatalf("%d records stored, want 4", v.Report.Stored)
	}
}

// readBatches fetches the batch headers of a partition from its leader.
func readBatches(ctx context.Context, t *testing.T, c *Cluster, topic string, partition int32) []record.Header {
	t.Helper()
	return fetchBatches(ctx, t, c, topic, partition, 0)
}

// fetchBatchAt fetches the header of the batch holding offset.
func fetchBatchAt(ctx context.Context, t *testing.T, c *Cluster, topic string, partition int32, offset int64) record.Header {
	t.Helper()
	for _, h := range fetchBatches(ctx, t, c, topic, partition, offset) {
		if h.BaseOffset <= offset && offset <= h.LastOffset() {
			return h
		}
	}
	t.Fatalf("%s[%d]: no batch holds offset %d", topic, partition, offset)
	return record.Header{}
}

// fetchBatches fetches the batch headers of a partition from its leader,
// from the batch holding offset on (up to 1 MiB).
func fetchBatches(ctx context.Context, t *testing.T, c *Cluster, topic string, partition int32, offset int64) []record.Header {
	t.Helper()
	l, err := c.Leader(ctx, topic, partition)
	must(t, err)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = partition
	fp.FetchOffset = offset
	fp.CurrentLeaderEpoch = -1
	fp.LastFetchedEpoch = -1
	fp.LogStartOffset = -1
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := Request(rctx, c.Node(l.Node).KafkaAddr, req)
	must(t, err)
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch %s[%d]: %+v", topic, partition, fr)
	}
	var out []record.Header
	for b := fr.Topics[0].Partitions[0].RecordBatches; len(b) > 0; {
		_, rest, h, err := record.Next(b)
		must(t, err)
		out = append(out, h)
		b = rest
	}
	return out
}
