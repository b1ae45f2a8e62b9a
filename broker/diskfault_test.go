package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/record"
)

// produceTo sends one idempotent batch (producer pid, epoch 0, sequence
// seq, one record holding value) to broker node and returns the
// partition's error, or the request's when no answer came within timeout.
func produceTo(t *testing.T, cl *kgo.Client, node int32, topic string, pid int64, seq int32, value string, timeout time.Duration) error {
	t.Helper()
	b, err := record.AppendBatch(nil, record.BatchOptions{ProducerID: pid, BaseSequence: seq},
		[]record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, int32(timeout.Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	nameTopicsByID(t, cl, req)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// fetchFrom reads partition 0 of topic from offset 0 to its high watermark
// on broker node and returns the raw batches.
func fetchFrom(t *testing.T, cl *kgo.Client, node int32, topic string) []byte {
	t.Helper()
	out, err := tryFetchFrom(t, cl, node, topic)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryFetchFrom is fetchFrom that returns a request or partition error
// instead of failing: a node that just restarted may not lead yet, nor
// know the topic's id (its metadata still loading).
func tryFetchFrom(t *testing.T, cl *kgo.Client, node int32, topic string) ([]byte, error) {
	t.Helper()
	var out []byte
	for offset := int64(0); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := fetchFromBroker(ctx, cl.Broker(int(node)), topic, offset, 0)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("fetch from node %d: %w", node, err)
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return nil, fmt.Errorf("fetch from node %d at %d: %w", node, offset, err)
		}
		if offset >= p.HighWatermark || len(p.RecordBatches) == 0 {
			return out, nil
		}
		for rest := p.RecordBatches; len(rest) > 0; {
			b, r, _, err := record.Next(rest)
			if err != nil {
				break // a partial batch at the end of the response
			}
			h, err := record.Check(b)
			if err != nil {
				t.Fatalf("fetch from node %d: %v", node, err)
			}
			out, offset, rest = append(out, b...), h.NextOffset(), r
		}
	}
}

// fetchFromBroker sends b a Fetch of partition 0 of topic from offset,
// waiting at most maxWait ms, for up to 1 MiB, at the highest version both
// sides speak (the topic named by id from v13).
func fetchFromBroker(ctx context.Context, b *kgo.Broker, topic string, offset int64, maxWait int32) (*kmsg.FetchResponse, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, maxWait, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := testcluster.NameTopicsByID(ctx, b, req); err != nil {
		return nil, err
	}
	return req.RequestWith(ctx, b)
}

// valuesOf returns the record values of raw batches, in order.
func valuesOf(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for len(b) > 0 {
		one, rest, _, err := record.Next(b)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := record.AppendRecords(nil, one)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			out = append(out, string(r.Value))
		}
		b = rest
	}
	return out
}

// checkHistory checks that log holds every acknowledged value exactly
// once and in the order acknowledged, and nothing else but values whose
// produce had no answer (maybe applied), each at most once.
func checkHistory(t *testing.T, log, acked, maybe []string) {
	t.Helper()
	seen := map[string]int{}
	var order []string
	for _, v := range log {
		seen[v]++
		switch {
		case seen[v] > 1:
			t.Fatalf("log holds %q twice: %q", v, log)
		case slices.Contains(acked, v):
			order = append(order, v)
		case !slices.Contains(maybe, v):
			t.Fatalf("log holds %q, never produced or refused: %q", v, log)
		}
	}
	if !slices.Equal(order, acked) {
		t.Fatalf("log holds the acknowledged values %q, want %q", order, acked)
	}
}

// TestNodeDiskFull: a node whose partition disk fills up keeps serving
// the records it holds, byte-identical, and refuses produce with
// KAFKA_STORAGE_ERROR; the produce that hit the fault waits (its entry is
// committed and applies once space returns). After healing, produce works
// again and every acknowledged record is in the log once, in order.
func TestNodeDiskFull(t *testing.T) {
	t.Parallel()
	ff := vfs.Faulty(nil)
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.PartitionFS = ff })
	// Shutdown waits for a produce in flight, which waits for the disk:
	// heal before the cluster stops, also when the test fails.
	t.Cleanup(ff.Heal)
	cl := c.Client(t)
	createTopic(t, cl, "diskfull", 1, 1)
	leader, _ := c.Leader("diskfull", 0, 10*time.Second)
	var acked, maybe []string
	produce := func(pid int64, seq int32, v string, timeout time.Duration) error {
		err := produceTo(t, cl, leader, "diskfull", pid, seq, v, timeout)
		switch {
		case err == nil || errors.Is(err, kerr.DuplicateSequenceNumber):
			if !slices.Contains(acked, v) {
				acked = append(acked, v)
			}
		case !errors.Is(err, kerr.KafkaStorageError):
			maybe = append(maybe, v) // no answer: it may still apply
		}
		return err
	}
	for i := range int32(5) {
		if err := produce(1, i, fmt.Sprint("a", i), 10*time.Second); err != nil {
			t.Fatalf("produce a%d: %v", i, err)
		}
	}
	before := fetchFrom(t, cl, leader, "diskfull")

	ff.Fail(vfs.OpFull, syscall.ENOSPC)
	// Its own client: a connection answers its requests in order, and this
	// one waits for the disk.
	slow := c.Client(t)
	stuck := make(chan error, 1)
	go func() { stuck <- produceTo(t, slow, leader, "diskfull", 1, 5, "a5", 20*time.Second) }()
	eventually(t, 10*time.Second, "the partition's writes fail", func() bool { return ff.Failures() > 0 })
	// Producer 2 polls: a refused batch is not proposed, so its sequence
	// stays 0; one that went in before the refusals began waits like a5.
	eventually(t, 10*time.Second, "produce is refused with KAFKA_STORAGE_ERROR", func() bool {
		return errors.Is(produce(2, 0, "b0", 2*time.Second), kerr.KafkaStorageError)
	})
	if got := fetchFrom(t, cl, leader, "diskfull"); !bytes.Equal(got, before) {
		t.Fatalf("fetch on a full disk: %d bytes, want the %d bytes from before", len(got), len(before))
	}

	ff.Heal()
	eventually(t, 20*time.Second, "produce works after healing", func() bool {
		return produce(1, 6, "a6", 5*time.Second) == nil
	})
	select {
	case err := <-stuck:
		t.Logf("the produce that hit the fault: %v", err)
		if err == nil {
			acked = slices.Insert(acked, 5, "a5")
		} else {
			maybe = append(maybe, "a5")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the produce that hit the fault never got an answer")
	}
	checkHistory(t, valuesOf(t, fetchFrom(t, cl, leader, "diskfull")), acked, maybe)
}

// TestNodeShutdownDuringDiskFault: a node stops promptly while a produce
// waits on its failing disk (the wait gives up; the entry is committed),
// and after it restarts on a healed disk the entry is applied, once.
func TestNodeShutdownDuringDiskFault(t *testing.T) {
	t.Parallel()
	ff := vfs.Faulty(nil)
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.PartitionFS = ff })
	t.Cleanup(ff.Heal)
	cl := c.Client(t)
	createTopic(t, cl, "diskstop", 1, 1)
	for i := range int32(3) {
		if err := produceTo(t, cl, 1, "diskstop", 1, i, fmt.Sprint("a", i), 10*time.Second); err != nil {
			t.Fatalf("produce a%d: %v", i, err)
		}
	}
	ff.Fail(vfs.OpFull, syscall.ENOSPC)
	slow := c.Client(t)
	stuck := make(chan error, 1)
	go func() { stuck <- produceTo(t, slow, 1, "diskstop", 1, 3, "a3", 30*time.Second) }()
	eventually(t, 10*time.Second, "the partition's writes fail", func() bool { return ff.Failures() > 0 })
	stopped := make(chan struct{})
	go func() { c.StopNode(1); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		ff.Heal() // let the node finish stopping before the test ends
		<-stopped
		t.Fatal("the node did not stop within 20s while a produce waited on its disk")
	}
	t.Logf("the produce that hit the fault: %v", <-stuck)
	ff.Heal()
	c.StartNode(1)
	c.WaitReady()
	cl2 := c.Client(t)
	var log []string
	eventually(t, 20*time.Second, "the committed entry applied at the restart", func() bool {
		b, err := tryFetchFrom(t, cl2, 1, "diskstop")
		if err != nil {
			return false // not leading yet
		}
		log = valuesOf(t, b)
		return len(log) == 4
	})
	checkHistory(t, log, []string{"a0", "a1", "a2", "a3"}, nil)
}
