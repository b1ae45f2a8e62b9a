package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// haltOnJoin halts, once, the node that answered a client's first
// ConsumerGroupHeartbeat, before the client reads the answer: the member
// has joined (and been assigned every partition) through a coordinator
// that is dead before the member can fetch its offsets.
type haltOnJoin struct {
	c      *testcluster.Cluster
	once   sync.Once
	halted chan int32 // the node halted
}

func (h *haltOnJoin) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.ConsumerGroupHeartbeat) || err != nil {
		return
	}
	h.once.Do(func() {
		h.c.HaltNode(int(meta.NodeID))
		h.halted <- meta.NodeID
	})
}

// TestMemberLeavesADeadCoordinator: a KIP-848 member whose coordinator
// dies between its join and its first OffsetFetch finds the new
// coordinator and consumes again within a few seconds (the time the
// cluster takes to drop the dead node from Metadata), not after the
// group's 45 s session timeout has fenced it.
func TestMemberLeavesADeadCoordinator(t *testing.T) {
	c := testcluster.Start(t, 3)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic = "dead-coord"
	createTestTopic(t, cl, topic, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 30 {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte{byte(i)}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	hook := &haltOnJoin{c: c, halted: make(chan int32, 1)}
	h := &GroupHistory{}
	m, err := StartMember(MemberConfig{Brokers: c.Seeds(), Group: "g-dead-coord", Topic: topic, Name: "m",
		ServerSide: true, Logger: memberLogger(t, "dead-coord-m"), Opts: []kgo.Opt{kgo.WithHooks(hook)}}, h)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		m.Close(cctx)
	}()
	var node int32
	select {
	case node = <-hook.halted:
	case <-ctx.Done():
		t.Fatal("the member never heartbeated")
	}
	t0 := time.Now()
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	err = poll(wctx, "a commit on every partition", func() (bool, error) {
		return h.CommittedSince([]int32{0, 1, 2}, t0), nil
	})
	d, class := m.GroupSessionFailing()
	t.Logf("coordinator %d halted after the join; member errors %v; group session failing for %v on end (%s)",
		node, m.Errors(), d.Round(time.Millisecond), class)
	if err != nil {
		t.Fatalf("the member did not consume again after its coordinator died: %v; the first error of each class:%s", err, m.FirstErrors())
	}
	t.Logf("committed on every partition %v after the halt", time.Since(t0).Round(time.Millisecond))
}

// createTestTopic creates topic with parts partitions, replicated on every
// node, and waits until its leaders are known.
func createTestTopic(t *testing.T, cl *kgo.Client, topic string, parts int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, parts, -1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 15000
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("CreateTopics %s: error code %d", topic, code)
	}
}
