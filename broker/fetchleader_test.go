package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A Fetch (v18, by topic id) sent to a follower answers
// NOT_LEADER_OR_FOLLOWER with the partition's leader and epoch and the
// leader's endpoint (KIP-951), as the follower's own replica knows them;
// one that names an id no topic has answers UNKNOWN_TOPIC_ID.
func TestFetchFromFollowerNamesLeader(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "led", 1, 3)
	leader, epoch := c.Leader("led", 0, 20*time.Second)
	if leader < 0 {
		t.Fatal("no leader")
	}
	follower := 1 + int(leader)%3
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.SessionEpoch = 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "led"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := testcluster.NameTopicsByID(ctx, cl.Broker(follower), req); err != nil {
		t.Fatal(err)
	}
	unknown := rt
	unknown.TopicID = [16]byte{0xEE}
	req.Topics = append(req.Topics, unknown)
	// A follower names the leader once it has heard from it (its first
	// heartbeat may come after the metadata named the leader).
	var resp *kmsg.FetchResponse
	var p kmsg.FetchResponseTopicPartition
	for p.CurrentLeader.LeaderID = -1; p.CurrentLeader.LeaderID < 0 && ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
		var err error
		if resp, err = req.RequestWith(ctx, cl.Broker(follower)); err != nil {
			t.Fatal(err)
		}
		p = resp.Topics[0].Partitions[0]
	}
	if resp.Version != 18 || p.ErrorCode != kerr.NotLeaderForPartition.Code ||
		p.CurrentLeader.LeaderID != leader || p.CurrentLeader.LeaderEpoch != epoch {
		t.Fatalf("v%d from follower %d: %+v, want leader %d epoch %d", resp.Version, follower, p, leader, epoch)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != leader || resp.Brokers[0].Port == 0 {
		t.Fatalf("node endpoints %+v, want leader %d", resp.Brokers, leader)
	}
	if code := resp.Topics[1].Partitions[0].ErrorCode; code != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown id: error %d", code)
	}
}
