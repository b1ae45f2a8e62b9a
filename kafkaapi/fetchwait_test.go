package kafkaapi

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// manyPartitions is more than the 65,536 cases reflect.Select takes.
const manyPartitions = 70_000

// A Fetch v4 naming partition 0 of a topic 70,000 times, at the log end,
// waits its MaxWait and is answered with the partition once (Kafka keys a
// Fetch's partitions by topic-partition), and the server goes on serving.
func TestFetchNamingOnePartition70000Times(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	c := h.dial()
	const maxWait = 100 * time.Millisecond
	req := fetchRequest(4, "t", maxWait, 1, make([]int64, manyPartitions)...)
	for i := range req.Topics[0].Partitions {
		req.Topics[0].Partitions[i].Partition = 0
	}
	start := time.Now()
	resp := fetch(t, c, req)
	if waited := time.Since(start); waited < maxWait {
		t.Fatalf("answered after %v, before MaxWait %v", waited, maxWait)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer has %d topics, the first %d partitions; want the partition once", len(resp.Topics), len(resp.Topics[0].Partitions))
	}
	if rp := resp.Topics[0].Partitions[0]; rp.Partition != 0 || rp.ErrorCode != 0 || len(rp.RecordBatches) != 0 {
		t.Fatalf("%+v", rp)
	}
	h.requireServing()
	// The same connection still works too.
	if rp := fetch(t, c, fetchRequest(4, "t", 0, 1, 0)).Topics[0].Partitions[0]; rp.ErrorCode != 0 {
		t.Fatalf("second fetch: %+v", rp)
	}
}

// A consumer of 70,000 distinct partitions long-polls, and data on the
// last of them wakes it.
func TestFetchWaitsOn70000Partitions(t *testing.T) {
	h := startServer(t, Config{})
	ps := h.fb.addTopic("t", manyPartitions)
	last := ps[manyPartitions-1]
	c := h.dial()
	before := last.changedCount()
	c.send(fetchRequest(12, "t", time.Hour, 1, make([]int64, manyPartitions)...))
	eventually(t, "fetch waiting", func() bool { return last.changedCount() > before })
	batch := makeBatch(1, "late")
	last.append(batch)

	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	c.read(resp)
	rp := resp.Topics[0].Partitions[manyPartitions-1]
	if rp.Partition != manyPartitions-1 || !bytes.Equal(rp.RecordBatches, batch) {
		t.Fatalf("last partition: %d, %d bytes", rp.Partition, len(rp.RecordBatches))
	}
	h.requireServing()
}
