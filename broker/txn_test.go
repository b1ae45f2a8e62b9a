package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/record"
)

// txnDriver plays a transactional producer and its coordinator with raw
// requests against one partition's leader: transactional batches by
// Produce, markers by WriteTxnMarkers.
type txnDriver struct {
	t     *testing.T
	c     *testcluster.Cluster
	cl    *kgo.Client
	topic string
	seq   map[int64]int32 // next sequence per producer id
}

// toLeader sends req to the partition's current leader, again while the
// answer is NOT_LEADER_OR_FOLLOWER (leadership may move; a retried batch
// is a duplicate, a retried marker ends nothing twice).
func (d *txnDriver) toLeader(req kmsg.Request, code func(kmsg.Response) int16) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		leader, _ := d.c.Leader(d.topic, 0, 10*time.Second)
		resp, err := d.cl.Broker(int(leader)).Request(ctx, req)
		if err == nil {
			switch c := code(resp); c {
			case 0:
				return
			case kerr.NotLeaderForPartition.Code, kerr.RequestTimedOut.Code:
			default:
				d.t.Fatalf("%T: error %v", req, kerr.ErrorForCode(c))
			}
		}
		if ctx.Err() != nil {
			d.t.Fatalf("%T: no answer: %v", req, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// produce sends one batch of values; pid < 0 is a plain producer.
func (d *txnDriver) produce(pid int64, transactional bool, values ...string) {
	d.t.Helper()
	opts := record.PlainBatch(record.CompressionNone)
	if pid >= 0 {
		opts = record.BatchOptions{ProducerID: pid, ProducerEpoch: 0, BaseSequence: d.seq[pid], Transactional: transactional}
		d.seq[pid] += int32(len(values))
	}
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(v)}
	}
	batch, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		d.t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	if transactional {
		req.TransactionID = kmsg.StringPtr("txn-test")
	}
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = d.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	nameTopicsByID(d.t, d.cl, req)
	d.toLeader(req, func(r kmsg.Response) int16 {
		return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	})
}

// end writes producer pid's COMMIT or ABORT marker.
func (d *txnDriver) end(pid int64, commit bool) {
	d.t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.Committed = pid, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = d.topic, []int32{0}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	d.toLeader(req, func(r kmsg.Response) int16 {
		return r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	})
}

// initProducerID allocates an idempotent producer id.
func (d *txnDriver) initProducerID() int64 {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, d.cl)
	if err != nil || resp.ErrorCode != 0 {
		d.t.Fatalf("InitProducerId: %v, code %d", err, resp.ErrorCode)
	}
	return resp.ProducerID
}

// pollValues reads values with cl until want have arrived, then for
// settle longer, and returns them all.
func pollValues(t *testing.T, cl *kgo.Client, want int, settle time.Duration) []string {
	t.Helper()
	var out []string
	deadline := time.Now().Add(30 * time.Second)
	var quiet time.Time
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded {
				t.Logf("fetch %s-%d: %v", topic, p, err)
			}
		})
		for _, r := range fs.Records() {
			out = append(out, string(r.Value))
		}
		if len(out) >= want && quiet.IsZero() {
			quiet = time.Now().Add(settle)
		}
		if !quiet.IsZero() && time.Now().After(quiet) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %v, want %d records", out, want)
		}
	}
}

// TestReadCommittedConsumerSeesOnlyCommitted: transactional batches
// produced raw, ended by WriteTxnMarkers through the partition leader's
// Raft group on a 3-node cluster, are read by franz-go's read_committed
// consumer, which filters aborted records with the Fetch response's
// AbortedTransactions and stops at the last stable offset: it sees the
// committed and plain records only, and nothing past an open transaction
// until that ends; again after every node was halted and restarted. The
// driver plays the coordinator, so no coordinator could verify its
// batches: verification is off, and its requests go at transactions v1's
// versions (Produce v12+ would ask the coordinator to add the partition).
func TestReadCommittedConsumerSeesOnlyCommitted(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.TxnPartitionVerification = false })
	cl := c.Client(t, v1Versions())
	createTopic(t, cl, "txn", 1, 3)
	d := &txnDriver{t: t, c: c, cl: cl, topic: "txn", seq: map[int64]int32{}}
	a, b, open := d.initProducerID(), d.initProducerID(), d.initProducerID()

	d.produce(a, true, "a1", "a2") // aborted below
	d.produce(b, true, "b1")       // committed below
	d.produce(-1, false, "p1")
	d.end(a, false)
	d.produce(a, true, "a3")
	d.end(b, true)
	d.end(a, true)
	d.end(b, true)              // a marker with no open transaction is still written
	d.produce(open, true, "o1") // stays open for now
	d.produce(-1, false, "p2")  // past the last stable offset

	committed := c.Client(t, kgo.ConsumeTopics("txn"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollValues(t, committed, 3, time.Second)
	if want := []string{"b1", "p1", "a3"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed with a transaction open read %v, want %v", got, want)
	}
	d.end(open, false)
	got = append(got, pollValues(t, committed, 1, 500*time.Millisecond)...)
	if want := []string{"b1", "p1", "a3", "p2"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed after the last abort read %v, want %v", got, want)
	}

	uncommitted := c.Client(t, kgo.ConsumeTopics("txn"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got = pollValues(t, uncommitted, 7, 500*time.Millisecond)
	if want := []string{"a1", "a2", "b1", "p1", "a3", "o1", "p2"}; !slices.Equal(got, want) {
		t.Fatalf("read_uncommitted read %v, want %v", got, want)
	}

	// Every node halted and restarted: the replicas load the transaction
	// state from their checkpoints (Halt still closes them; the replay of
	// markers after a crash is fsm's crash harness's), and read_committed
	// reads the same.
	committed.Close()
	uncommitted.Close()
	for id := 1; id <= 3; id++ {
		c.HaltNode(id)
	}
	for id := 1; id <= 3; id++ {
		c.StartNode(id)
	}
	c.WaitReady()
	again := c.Client(t, kgo.ConsumeTopics("txn"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if got := pollValues(t, again, 4, 500*time.Millisecond); !slices.Equal(got, []string{"b1", "p1", "a3", "p2"}) {
		t.Fatalf("read_committed after a restart of every node read %v", got)
	}
}
