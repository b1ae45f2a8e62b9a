package client_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// Records sent by TestClusterProduceThroughLeaderKills: 100,000 without
// the race detector, 20,000 with it (which slows everything about tenfold).
func chaosRecords() int {
	if raceEnabled {
		return 20_000
	}
	return 100_000
}

const (
	chaosTopic      = "chaos"
	chaosPartitions = 4
	chaosWriters    = 8
	chaosKeys       = 16 // distinct keys per writer
)

// chaosResult is one record's outcome, written by its promise (or by the
// writer when Produce itself refused the record).
type chaosResult struct {
	calls     int
	err       error
	partition int32
	offset    int64
}

func chaosKey(w, i int) []byte   { return []byte(fmt.Sprintf("w%d-k%d", w, i%chaosKeys)) }
func chaosValue(w, i int) []byte { return []byte(fmt.Sprintf("%d:%d:payload-%08d", w, i, i)) }

// parseChaosValue is the inverse of chaosValue.
func parseChaosValue(v []byte) (w, i int, ok bool) {
	f := strings.SplitN(string(v), ":", 3)
	if len(f) != 3 {
		return 0, 0, false
	}
	w, err1 := strconv.Atoi(f[0])
	i, err2 := strconv.Atoi(f[1])
	return w, i, err1 == nil && err2 == nil
}

// One idempotent producer shared by 8 goroutines sends keyed records to a
// 4-partition topic with replication factor 3, while the test halts (as
// kill -9 would) the leader of partition 0 and starts it again, twice.
// Then it reads the whole topic and checks:
//   - every record got exactly one result: success, or an error given to
//     the caller (from Produce or the promise);
//   - every successful record is in the log exactly once, at the
//     partition and offset its result named;
//   - per partition, each goroutine's records are in the order it sent
//     them (so per key too);
//   - nothing is in the log that was never sent, and a record that failed
//     is absent unless its fate was unknown (a delivery timeout).
func TestClusterProduceThroughLeaderKills(t *testing.T) {
	total := chaosRecords()
	perWriter := total / chaosWriters
	c := startCluster(t, map[string]int32{chaosTopic: chaosPartitions})
	seeds := c.Seeds()

	p, err := client.NewProducer(client.Brokers(seeds...), client.BlockOnBufferFull(), client.BufferLimit(256<<10),
		client.RetryBackoff(20*time.Millisecond, 250*time.Millisecond), client.RequestTimeout(10*time.Second),
		client.DeliveryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())

	results := make([][]chaosResult, chaosWriters)
	var completed atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for w := range chaosWriters {
		results[w] = make([]chaosResult, perWriter)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				res := &results[w][i]
				r := &client.Record{Topic: chaosTopic, Key: chaosKey(w, i), Value: chaosValue(w, i)}
				err := p.Produce(ctx, r, func(r *client.Record, err error) {
					res.calls++
					res.err, res.partition, res.offset = err, r.Partition, r.Offset
					completed.Add(1)
				})
				if err != nil {
					res.calls++
					res.err = err
					completed.Add(1)
				}
			}
		}()
	}

	// Two kills of partition 0's leader, when a quarter and when 60% of
	// the records have their results; each waits for a new leader and for
	// records to flow before the node comes back.
	for _, at := range []int64{int64(total) / 4, int64(total) * 6 / 10} {
		waitFor(t, "records completed", func() bool { return completed.Load() >= at })
		haltLeader(t, c, &completed, int64(total))
	}
	wg.Wait()
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	// Every record has exactly one result.
	ok, failed := 0, map[string]int{}
	for w := range chaosWriters {
		for i, res := range results[w] {
			switch {
			case res.calls != 1:
				t.Fatalf("writer %d record %d: %d results", w, i, res.calls)
			case res.err == nil:
				ok++
			default:
				failed[res.err.Error()]++
			}
		}
	}
	t.Logf("%d records: %d delivered, failures %v", total, ok, failed)
	if ok < total/2 {
		t.Fatalf("only %d of %d records delivered", ok, total)
	}

	// Read everything and check it against the results.
	ends := logEnds(t, c.Seeds(), chaosTopic, chaosPartitions)
	logged := consumeRange(t, c.Seeds(), chaosTopic, ends)
	type pos struct {
		partition int32
		offset    int64
	}
	where := make([][]*pos, chaosWriters)
	for w := range where {
		where[w] = make([]*pos, perWriter)
	}
	for part, recs := range logged {
		last := make([]int, chaosWriters) // per writer: last index seen in this partition
		for w := range last {
			last[w] = -1
		}
		for _, r := range recs {
			w, i, valid := parseChaosValue(r.Value)
			if !valid || w < 0 || w >= chaosWriters || i < 0 || i >= perWriter ||
				string(r.Value) != string(chaosValue(w, i)) || string(r.Key) != string(chaosKey(w, i)) {
				t.Fatalf("%s[%d]@%d: key %q value %q was never sent", chaosTopic, part, r.Offset, r.Key, r.Value)
			}
			if prev := where[w][i]; prev != nil {
				t.Fatalf("writer %d record %d is in the log twice: %d@%d and %d@%d", w, i, prev.partition, prev.offset, part, r.Offset)
			}
			where[w][i] = &pos{part, r.Offset}
			if i <= last[w] {
				t.Fatalf("%s[%d]@%d: writer %d record %d after its record %d", chaosTopic, part, r.Offset, w, i, last[w])
			}
			last[w] = i
		}
	}
	unknownPresent := 0
	for w := range chaosWriters {
		for i, res := range results[w] {
			at := where[w][i]
			switch {
			case res.err == nil && at == nil:
				t.Fatalf("writer %d record %d was acknowledged at %d@%d but is not in the log", w, i, res.partition, res.offset)
			case res.err == nil && (at.partition != res.partition || at.offset != res.offset):
				t.Fatalf("writer %d record %d was acknowledged at %d@%d but is at %d@%d", w, i, res.partition, res.offset, at.partition, at.offset)
			case res.err != nil && at != nil && !errors.Is(res.err, client.ErrDeliveryTimeout):
				t.Fatalf("writer %d record %d failed with %v but is in the log at %d@%d", w, i, res.err, at.partition, at.offset)
			case res.err != nil && at != nil:
				unknownPresent++
			}
		}
	}
	t.Logf("log ends %v; %d timed-out records were written after all", ends, unknownPresent)
	waitPreferredLeaders(t, c, chaosTopic) // before the cluster shuts down
}

// haltLeader halts the leader of partition 0 of the chaos topic, waits for
// another node to lead it and for some records to complete, then starts
// the halted node again.
func haltLeader(t *testing.T, c *testcluster.Cluster, completed *atomic.Int64, total int64) {
	t.Helper()
	waitPreferredLeaders(t, c, chaosTopic)
	leader, epoch := c.Leader(chaosTopic, 0, 20*time.Second)
	if leader < 0 {
		t.Fatal("partition 0 has no leader")
	}
	c.HaltNode(int(leader))
	newLeader, newEpoch := c.Leader(chaosTopic, 0, 20*time.Second)
	if newLeader < 0 || newLeader == leader || newEpoch <= epoch {
		t.Fatalf("after halting node %d (epoch %d): leader %d epoch %d", leader, epoch, newLeader, newEpoch)
	}
	from := completed.Load()
	waitFor(t, "records completing without the halted node", func() bool { return completed.Load() >= from+(total-from)/10 })
	c.StartNode(int(leader))
	c.WaitReady()
	t.Logf("halted node %d (leader of %s[0] at epoch %d); node %d took over at epoch %d; node %d restarted",
		leader, chaosTopic, epoch, newLeader, newEpoch, leader)
}

// waitFor polls cond every 10ms for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
