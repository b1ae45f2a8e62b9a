package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// describeCluster asks node for DescribeCluster (v2 with kgo), with or
// without the fenced brokers.
func describeCluster(t *testing.T, cl *kgo.Client, node int, fenced bool) *kmsg.DescribeClusterResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = fenced
	resp, err := req.RequestWith(ctx, cl.Broker(node))
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("DescribeCluster from node %d: %v %+v", node, err, resp)
	}
	return resp
}

// A stopped node stays registered: DescribeCluster v2 lists it, fenced
// and at its registered address, only with IncludeFencedBrokers, as Kafka
// lists a broker whose heartbeats stopped.
func TestDescribeClusterListsStoppedNodeFenced(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	controller := describeCluster(t, cl, 1, true).ControllerID
	victim, asker := 3, 1
	switch controller {
	case 3:
		victim = 2
	case 1:
		asker = 2
	}
	before := describeCluster(t, cl, asker, true)
	var addr kmsg.DescribeClusterResponseBroker
	for _, b := range before.Brokers {
		if b.IsFenced {
			t.Fatalf("broker %d fenced while all run: %+v", b.NodeID, before.Brokers)
		}
		if b.NodeID == int32(victim) {
			addr = b
		}
	}
	c.StopNode(victim)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := describeCluster(t, cl, asker, true)
		fenced := map[int32]kmsg.DescribeClusterResponseBroker{}
		for _, b := range resp.Brokers {
			if b.IsFenced {
				fenced[b.NodeID] = b
			}
		}
		if b, ok := fenced[int32(victim)]; ok {
			if len(fenced) != 1 || len(resp.Brokers) != 3 || b.Host != addr.Host || b.Port != addr.Port {
				t.Fatalf("brokers %+v, want node %d alone fenced at %s:%d", resp.Brokers, victim, addr.Host, addr.Port)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d not fenced 30 s after it stopped: %+v", victim, resp.Brokers)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, b := range describeCluster(t, cl, asker, false).Brokers {
		if b.NodeID == int32(victim) || b.IsFenced {
			t.Fatalf("without IncludeFencedBrokers: %+v", b)
		}
	}
}
