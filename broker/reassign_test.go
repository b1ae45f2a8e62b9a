package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// Grow from 3 to 4 nodes under produce load: move partition 0 of a topic
// from three nodes to the fourth and two of them, with kadm. Every
// acknowledged record is read back once, in order; the replicas end
// byte-identical; the node left out no longer holds the partition; and
// with that node stopped the partition still takes writes.
func TestReassignPartitionUnderLoad(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 4, func(cfg *broker.Config) { cfg.DefaultReplicationFactor = 3 })
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "moving"
	from, to := createMovable(t, cl, topic)
	gone := from[0]

	acked := produceWhile(t, ctx, cl, topic)
	defer acked.stop()
	acked.waitFor(t, 200)

	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, to)
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[topic][0]; r.Err != nil {
		t.Fatalf("AlterPartitionAssignments: %v %s", r.Err, r.ErrMessage)
	}
	eventually(t, 60*time.Second, "the move to finish", func() bool {
		l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
		return err == nil && len(l.Sorted()) == 0
	})
	n := acked.stop()
	if n < 200 {
		t.Fatalf("only %d records acknowledged", n)
	}
	md := metadataOf(t, cl, topic)
	if got := md[0].replicas; !slices.Equal(got, to) {
		t.Fatalf("replicas after the move %v, want %v", got, to)
	}
	recs := consumeAll(t, c.Seeds(), topic, n)
	checkExactlyOnce(t, recs, acked.values())

	eventually(t, 30*time.Second, "the node left out to remove its replica", func() bool {
		_, err := os.Stat(filepath.Join(c.DataDir(int(gone)), "partitions", topic+"-0"))
		return !c.Node(int(gone)).HasReplica(topic, 0) && errors.Is(err, os.ErrNotExist)
	})
	var logs [][]byte
	eventually(t, 30*time.Second, "the replicas to converge", func() bool {
		logs = logs[:0]
		var hws []int64
		for _, id := range to {
			l, hw, ok := c.Node(int(id)).ReplicaLog(topic, 0)
			if !ok {
				return false
			}
			logs, hws = append(logs, l), append(hws, hw)
		}
		return hws[0] == hws[1] && hws[1] == hws[2]
	})
	for i := 1; i < len(logs); i++ {
		if !bytes.Equal(logs[0], logs[i]) {
			t.Fatalf("replica logs differ: %d vs %d bytes", len(logs[0]), len(logs[i]))
		}
	}

	c.StopNode(int(gone))
	r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte("after")}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatalf("produce with the old replica stopped: %v", err)
	}
}

// Kafka's answers to bad reassignments, and a cancellation that returns a
// partition to its replicas.
func TestReassignErrorsAndCancel(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 4, func(cfg *broker.Config) { cfg.DefaultReplicationFactor = 3 })
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	from, to := createMovable(t, cl, "t")
	for _, tc := range []struct {
		part    int32
		brokers []int32
		cancel  bool
		want    error
	}{
		{0, []int32{1, 2, 9}, false, kerr.InvalidReplicaAssignment},
		{0, []int32{1, 2, 2}, false, kerr.InvalidReplicaAssignment},
		{0, []int32{1, 2}, false, kerr.InvalidReplicaAssignment},
		{5, []int32{1, 2, 3}, false, kerr.UnknownTopicOrPartition},
		{0, []int32{}, false, kerr.InvalidReplicaAssignment},
		{0, nil, true, kerr.NoReassignmentInProgress},
	} {
		req := kadm.AlterPartitionAssignmentsReq{}
		if tc.cancel {
			req.CancelAssign("t", tc.part)
		} else {
			req.Assign("t", tc.part, tc.brokers)
		}
		res, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := res["t"][tc.part].Err; !errors.Is(got, tc.want) {
			t.Errorf("%v cancel=%v: %v, want %v", tc.brokers, tc.cancel, got, tc.want)
		}
	}
	// v1 without AllowReplicationFactorChange (KIP-860): a target of
	// another length is INVALID_REPLICATION_FACTOR, once the target's own
	// checks pass.
	for _, tc := range []struct {
		brokers []int32
		want    error
	}{
		{[]int32{1, 2}, kerr.InvalidReplicationFactor},
		{[]int32{1, 2, 3, 4}, kerr.InvalidReplicationFactor},
		{[]int32{1, 2, 9, 4}, kerr.InvalidReplicaAssignment},
		{[]int32{1, 1}, kerr.InvalidReplicaAssignment},
	} {
		if err := assignKeepingFactor(t, cl, "t", 0, tc.brokers); !errors.Is(err, tc.want) {
			t.Errorf("%v keeping the factor: %v, want %v", tc.brokers, err, tc.want)
		}
	}
	// The node added is stopped, so the move cannot finish; it is listed,
	// then cancelled, and the partition keeps working on its old replicas.
	c.StopNode(int(to[0]))
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("t", 0, to)
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res["t"][0].Err != nil {
		t.Fatalf("start: %v %v", err, res)
	}
	// While it moves, the factor is the target's (3), not the 4 replicas
	// the partition has during the move.
	if err := assignKeepingFactor(t, cl, "t", 0, append(slices.Clone(to), from[0])); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("4 replicas while moving to 3, keeping the factor: %v", err)
	}
	l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"t": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Sorted(); len(got) != 1 || !slices.Equal(got[0].AddingReplicas, to[:1]) ||
		!slices.Equal(got[0].RemovingReplicas, from[:1]) || !slices.Equal(got[0].Replicas, append(slices.Clone(to), from[0])) {
		t.Fatalf("listed %+v", got)
	}
	req = kadm.AlterPartitionAssignmentsReq{}
	req.CancelAssign("t", 0)
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res["t"][0].Err != nil {
		t.Fatalf("cancel: %v %v", err, res)
	}
	eventually(t, 30*time.Second, "the group to drop the added node and take writes", func() bool {
		md := metadataOf(t, cl, "t")
		return slices.Equal(md[0].replicas, from) &&
			cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: []byte("x")}).FirstErr() == nil
	})
}

// createMovable creates topic with one partition of three replicas on a
// cluster of four and returns the replicas, and a target that swaps the
// first one for the node that holds none.
func createMovable(t *testing.T, cl *kgo.Client, topic string) (replicas, target []int32) {
	t.Helper()
	createTopic(t, cl, topic, 1, 3)
	eventually(t, 20*time.Second, "the partition to have a leader", func() bool {
		replicas = metadataOf(t, cl, topic)[0].replicas // listed once it has a leader
		return len(replicas) == 3
	})
	for id := int32(1); id <= 4; id++ {
		if !slices.Contains(replicas, id) {
			target = []int32{id, replicas[1], replicas[2]}
		}
	}
	return replicas, target
}

// ackLog produces numbered records to partition 0 of a topic until
// stopped, and remembers the values acknowledged.
type ackLog struct {
	mu     sync.Mutex // guards acked
	acked  []string
	cancel context.CancelFunc
	done   chan struct{}
}

func produceWhile(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) *ackLog {
	ctx, cancel := context.WithCancel(ctx)
	a := &ackLog{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for i := 0; ctx.Err() == nil; i++ {
			v := fmt.Sprintf("v-%06d", i)
			r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				continue // not acknowledged: may or may not be in the log, never twice
			}
			a.mu.Lock()
			a.acked = append(a.acked, v)
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *ackLog) waitFor(t *testing.T, n int) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%d records acknowledged", n), func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.acked) >= n
	})
}

// stop ends producing and returns how many records were acknowledged.
func (a *ackLog) stop() int {
	a.cancel()
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acked)
}

func (a *ackLog) values() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.acked)
}

// checkExactlyOnce checks that recs hold each acknowledged value exactly
// once, in acknowledgement order (unacknowledged values may appear once).
func checkExactlyOnce(t *testing.T, recs []*kgo.Record, acked []string) {
	t.Helper()
	seen := map[string]int{}
	var order []string
	for _, r := range recs {
		seen[string(r.Value)]++
		if seen[string(r.Value)] > 1 {
			t.Fatalf("%s read twice", r.Value)
		}
		order = append(order, string(r.Value))
	}
	last := -1
	for _, v := range acked {
		i := slices.Index(order, v)
		if i < 0 {
			t.Fatalf("acknowledged %s lost", v)
		}
		if i < last {
			t.Fatalf("%s out of order", v)
		}
		last = i
	}
}

// assignKeepingFactor asks for a move with AlterPartitionAssignments v1
// and AllowReplicationFactorChange false, and returns the partition's
// error.
func assignKeepingFactor(t *testing.T, cl *kgo.Client, topic string, p int32, replicas []int32) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.AllowReplicationFactorChange = false
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = p, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 1 || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("AlterPartitionAssignments: %+v", resp)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}
