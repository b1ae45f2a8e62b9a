package broker_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// quickRetention checks retention every 100 ms.
func quickRetention(c *broker.Config) { c.RetentionCheckInterval = 100 * time.Millisecond }

// createWithConfigs creates a one-partition topic on 3 replicas with
// configs, through kadm.
func createWithConfigs(t *testing.T, adm *kadm.Client, topic string, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := adm.CreateTopic(ctx, 1, 3, configs, topic)
	if err != nil || r.Err != nil {
		t.Fatalf("CreateTopic %s: %v %v", topic, err, r.Err)
	}
}

// produceAt produces n records to partition 0 with timestamp ts, one
// batch each, and returns the high watermark after them.
func produceAt(t *testing.T, cl *kgo.Client, topic string, n int, ts time.Time, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: 0, Timestamp: ts, Value: fmt.Appendf(nil, "%s-%d", value, i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// replicaStarts is each running node's log start offset and high
// watermark of topic's partition 0.
func replicaStarts(c *testcluster.Cluster, topic string) (starts, hws []int64) {
	for _, n := range c.Running() {
		s, hw, ok := n.ReplicaOffsets(topic, 0)
		if ok {
			starts, hws = append(starts, s), append(hws, hw)
		}
	}
	return starts, hws
}

// allAt reports whether 3 replicas report start and hw.
func allAt(c *testcluster.Cluster, topic string, start, hw int64) bool {
	starts, hws := replicaStarts(c, topic)
	if len(starts) != 3 {
		return false
	}
	for i := range starts {
		if starts[i] != start || hws[i] != hw {
			return false
		}
	}
	return true
}

// segmentFiles counts node's .log files of topic's partition 0.
func segmentFiles(c *testcluster.Cluster, node int, topic string) int {
	m, _ := filepath.Glob(filepath.Join(c.DataDir(node), "partitions", topic+"-0", "log", "*.log"))
	return len(m)
}

// fetchError fetches offset from the partition's leader and returns the
// partition's error.
func fetchError(t *testing.T, c *testcluster.Cluster, cl *kgo.Client, topic string, offset int64) error {
	t.Helper()
	leader, _ := c.Leader(topic, 0, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := fetchFromBroker(ctx, cl.Broker(int(leader)), topic, offset, 10)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// TestRetentionMsOnEveryReplica: a topic with retention.ms of 1.5 s loses
// its old segments on all three replicas; the log start offset is equal
// everywhere, ListOffsets earliest returns it, a Fetch below it is
// OFFSET_OUT_OF_RANGE, and it survives a leader kill and a full restart.
func TestRetentionMsOnEveryReplica(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, quickRetention)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createWithConfigs(t, adm, "ret-ms", map[string]*string{
		"retention.ms": kmsg.StringPtr("1500"), "segment.ms": kmsg.StringPtr("200")})
	for round := range 3 { // several segments: segment.ms rolls between rounds
		produceAt(t, cl, "ret-ms", 4, time.Now(), fmt.Sprint("old", round))
		time.Sleep(250 * time.Millisecond)
	}
	if n := segmentFiles(c, 1, "ret-ms"); n < 3 {
		t.Fatalf("node 1 has %d segment files before retention, want several", n)
	}
	eventually(t, 20*time.Second, "retention deleted everything expired on every replica", func() bool {
		return allAt(c, "ret-ms", 12, 12)
	})
	for node := 1; node <= 3; node++ {
		if n := segmentFiles(c, node, "ret-ms"); n != 1 {
			t.Fatalf("node %d keeps %d segment files, want only the empty active one", node, n)
		}
	}
	// Records an hour ahead stay for the rest of the test.
	produceAt(t, cl, "ret-ms", 3, time.Now().Add(time.Hour), "new")
	checkStart(t, c, cl, adm, "ret-ms", 12, 15)

	leader, _ := c.Leader("ret-ms", 0, 10*time.Second)
	c.HaltNode(int(leader))
	produceAt(t, cl, "ret-ms", 1, time.Now().Add(time.Hour), "after-kill")
	c.StartNode(int(leader))
	c.WaitReady()
	eventually(t, 20*time.Second, "the killed leader caught up with the same start", func() bool {
		return allAt(c, "ret-ms", 12, 16)
	})
	for i := 1; i <= 3; i++ {
		c.StopNode(i)
	}
	for i := 1; i <= 3; i++ {
		c.StartNode(i)
	}
	c.WaitReady()
	eventually(t, 20*time.Second, "after a full restart every replica starts at 12", func() bool {
		return allAt(c, "ret-ms", 12, 16)
	})
	checkStart(t, c, c.Client(t), kadm.NewClient(c.Client(t)), "ret-ms", 12, 16)
}

// checkStart checks what clients see of a log start offset: ListOffsets
// earliest, OFFSET_OUT_OF_RANGE below it, the records from it on.
func checkStart(t *testing.T, c *testcluster.Cluster, cl *kgo.Client, adm *kadm.Client, topic string, start, end int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var earliest kadm.ListedOffset
	eventually(t, 20*time.Second, "ListOffsets earliest answered", func() bool {
		offs, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return false
		}
		earliest, _ = offs.Lookup(topic, 0)
		return earliest.Err == nil
	})
	if earliest.Offset != start {
		t.Fatalf("ListOffsets earliest = %d, want %d", earliest.Offset, start)
	}
	var ferr error
	eventually(t, 20*time.Second, "a Fetch below the start answered by the leader", func() bool {
		ferr = fetchError(t, c, cl, topic, start-1)
		return !errors.Is(ferr, kerr.NotLeaderForPartition) && !errors.Is(ferr, kerr.LeaderNotAvailable)
	})
	if !errors.Is(ferr, kerr.OffsetOutOfRange) {
		t.Fatalf("Fetch below the start: %v, want OFFSET_OUT_OF_RANGE", ferr)
	}
	got := consumeAll(t, c.Seeds(), topic, int(end-start))
	if got[0].Offset != start || len(got) != int(end-start) {
		t.Fatalf("consumed %d records from offset %d, want %d from %d", len(got), got[0].Offset, end-start, start)
	}
}

// TestRetentionBytesOnEveryReplica: retention.bytes deletes the oldest
// segments on every replica, keeping at least that many bytes.
func TestRetentionBytesOnEveryReplica(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, quickRetention)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	createWithConfigs(t, kadm.NewClient(cl), "ret-bytes", map[string]*string{
		"retention.bytes": kmsg.StringPtr("600"), "segment.ms": kmsg.StringPtr("100")})
	for round := range 6 { // one batch of about 300 bytes per segment
		produceAt(t, cl, "ret-bytes", 1, time.Now(), fmt.Sprintf("%0250d", round))
		time.Sleep(150 * time.Millisecond)
	}
	var starts, hws []int64
	defer func() { t.Logf("starts %v, high watermarks %v", starts, hws) }()
	eventually(t, 20*time.Second, "every replica trimmed to the same start", func() bool {
		starts, hws = replicaStarts(c, "ret-bytes")
		return len(starts) == 3 && starts[0] >= 3 && starts[0] == starts[1] && starts[1] == starts[2] && hws[0] == 6
	})
	if starts[0] > 4 {
		t.Fatalf("start %d: retention kept fewer than 600 bytes", starts[0])
	}
}

// TestDeleteRecords (kadm) moves the start of a 3-replica partition up,
// to an offset and then to the high watermark; an offset past the high
// watermark is OFFSET_OUT_OF_RANGE and changes nothing.
func TestDeleteRecords(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createWithConfigs(t, adm, "delrec", nil)
	produceAt(t, cl, "delrec", 10, time.Now(), "v")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A Metadata answer may name no leader for a moment (an election, a
	// member gossip suspects); kadm gives that back as a shard error, which
	// an admin retries, as here. DeleteRecords to one offset is idempotent.
	del := func(offset int64) kadm.DeleteRecordsResponse {
		t.Helper()
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: "delrec", Partition: 0, At: offset})
		var d kadm.DeleteRecordsResponse
		whileRetriable(ctx, t, fmt.Sprintf("DeleteRecords(%d)", offset), func() error {
			r, err := adm.DeleteRecords(ctx, o)
			if err != nil {
				return err
			}
			if d, _ = r.Lookup("delrec", 0); kerr.IsRetriable(d.Err) {
				return d.Err
			}
			return nil
		})
		return d
	}
	if d := del(4); d.Err != nil || d.LowWatermark != 4 {
		t.Fatalf("DeleteRecords(4) = %d, %v", d.LowWatermark, d.Err)
	}
	eventually(t, 10*time.Second, "every replica starts at 4", func() bool { return allAt(c, "delrec", 4, 10) })
	checkStart(t, c, cl, adm, "delrec", 4, 10)
	if d := del(11); !errors.Is(d.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("DeleteRecords past the high watermark: %v, want OFFSET_OUT_OF_RANGE", d.Err)
	}
	if d := del(-1); d.Err != nil || d.LowWatermark != 10 {
		t.Fatalf("DeleteRecords(-1) = %d, %v; want the high watermark 10", d.LowWatermark, d.Err)
	}
	eventually(t, 10*time.Second, "every replica is empty from 10", func() bool { return allAt(c, "delrec", 10, 10) })
}
