package kafkaapi

import (
	"bytes"
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// fetchByID builds a v13+ Fetch of partition 0 of the topic with id.
func fetchByID(version int16, id [16]byte, offset int64) *kmsg.FetchRequest {
	req := fetchRequest(version, "", 0, 1, offset)
	req.Topics[0].TopicID = id
	return req
}

func idOfTopic(t *testing.T, h *harness, name string) [16]byte {
	t.Helper()
	for _, tv := range h.fb.Cluster().Topics {
		if tv.Name == name {
			return tv.ID
		}
	}
	t.Fatalf("no topic %q", name)
	return [16]byte{}
}

// From v13 a Fetch names topics by id: a known id is read and answered
// under its id; an unknown or zero id answers UNKNOWN_TOPIC_ID without
// offsets, and does not hold the others back.
func TestFetchByTopicID(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	b0 := makeBatch(1, "a", "b")
	p.append(b0)
	id := idOfTopic(t, h, "t")
	c := h.dial()
	for v := int16(13); v <= 18; v++ {
		req := fetchByID(v, id, 0)
		unknown := kmsg.NewFetchRequestTopic()
		unknown.TopicID = [16]byte{0xEE}
		unknown.Partitions = req.Topics[0].Partitions
		zero := kmsg.NewFetchRequestTopic()
		zero.Partitions = req.Topics[0].Partitions
		req.Topics = append(req.Topics, unknown, zero)
		resp := fetch(t, c, req)
		if len(resp.Topics) != 3 || resp.Topics[0].TopicID != id || resp.Topics[1].TopicID != unknown.TopicID {
			t.Fatalf("v%d: topics %+v", v, resp.Topics)
		}
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 || rp.HighWatermark != 2 || !bytes.Equal(rp.RecordBatches, b0) {
			t.Fatalf("v%d: known id answered %+v", v, rp)
		}
		for _, rt := range resp.Topics[1:] {
			rp := rt.Partitions[0]
			if rp.ErrorCode != kerr.UnknownTopicID.Code || rp.HighWatermark != -1 || rp.LogStartOffset != -1 ||
				rp.RecordBatches == nil || len(rp.RecordBatches) != 0 {
				t.Fatalf("v%d: unknown id answered %+v", v, rp)
			}
		}
	}
	// A v12 Fetch still names topics by name.
	rp := fetch(t, c, fetchRequest(12, "t", 0, 1, 0)).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 || !bytes.Equal(rp.RecordBatches, b0) {
		t.Fatalf("v12 by name: %+v", rp)
	}
}

// A partition named twice by id is read once, as its last entry asks.
func TestFetchByTopicIDCollapses(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	p.append(makeBatch(1, "a"))
	p.append(makeBatch(2, "b"))
	id := idOfTopic(t, h, "t")
	req := fetchByID(13, id, 0)
	again := fetchByID(13, id, 1).Topics[0]
	req.Topics = append(req.Topics, again)
	resp := fetch(t, h.dial(), req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answered %+v", resp.Topics)
	}
	if n := countBatches(t, resp.Topics[0].Partitions[0].RecordBatches); n != 1 {
		t.Fatalf("read from offset 1 returned %d batches", n)
	}
}

// leaderElsewhere is the fake backend on a node (1) whose replicas follow
// node 2, which leads every partition in epoch 7.
type leaderElsewhere struct{ *fakeBackend }

func (b leaderElsewhere) Cluster() ClusterView {
	v := b.fakeBackend.Cluster()
	rack := "r2"
	v.Brokers = append(v.Brokers, Broker{NodeID: 2, Host: "node2.example", Port: 9093, Rack: rack})
	for ti := range v.Topics {
		for pi := range v.Topics[ti].Partitions {
			v.Topics[ti].Partitions[pi].Leader, v.Topics[ti].Partitions[pi].LeaderEpoch = 2, 7
		}
	}
	return v
}

// From v16 a partition answered NOT_LEADER_OR_FOLLOWER carries the leader
// and its epoch, and the response the leader's endpoint (KIP-951); before
// v16 neither is filled.
func TestFetchLeaderDiscoveryOnFollower(t *testing.T) {
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend { return leaderElsewhere{fb} })
	p := h.fb.addTopic("t", 2)
	for _, part := range p {
		part.set(func(p *fakePartition) { p.leader = false })
	}
	id := idOfTopic(t, h, "t")
	c := h.dial()
	for _, v := range []int16{12, 15, 16, 18} {
		req := fetchRequest(v, "t", 0, 1, 0, 0)
		if v >= 13 {
			req.Topics[0].TopicID = id
		}
		resp := fetch(t, c, req)
		for _, rp := range resp.Topics[0].Partitions {
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				t.Fatalf("v%d: %+v", v, rp)
			}
			want := kmsg.NewFetchResponseTopicPartitionCurrentLeader()
			if v >= 16 {
				want.LeaderID, want.LeaderEpoch = 2, 7
			}
			if rp.CurrentLeader.LeaderID != want.LeaderID || rp.CurrentLeader.LeaderEpoch != want.LeaderEpoch {
				t.Fatalf("v%d: current leader %+v, want %+v", v, rp.CurrentLeader, want)
			}
		}
		if v < 16 {
			if len(resp.Brokers) != 0 {
				t.Fatalf("v%d: brokers %+v", v, resp.Brokers)
			}
			continue
		}
		if len(resp.Brokers) != 1 {
			t.Fatalf("v%d: brokers %+v, want node 2 once", v, resp.Brokers)
		}
		b := resp.Brokers[0]
		if b.NodeID != 2 || b.Host != "node2.example" || b.Port != 9093 || b.Rack == nil || *b.Rack != "r2" {
			t.Fatalf("v%d: broker %+v", v, b)
		}
	}
}

// FENCED_LEADER_EPOCH (a client behind the leader's epoch) carries the
// current leader too: here this node, in its own epoch.
func TestFetchLeaderDiscoveryOnFencedEpoch(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	req := fetchByID(16, idOfTopic(t, h, "t"), 0)
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = 3 // the replica is at 5
	resp := fetch(t, h.dial(), req)
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode != kerr.FencedLeaderEpoch.Code || rp.CurrentLeader.LeaderID != 1 || rp.CurrentLeader.LeaderEpoch != 5 {
		t.Fatalf("%+v", rp)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Rack != nil {
		t.Fatalf("brokers %+v", resp.Brokers)
	}
	// UNKNOWN_LEADER_EPOCH (a client ahead) does not.
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = 9
	resp = fetch(t, h.dial(), req)
	if rp := resp.Topics[0].Partitions[0]; rp.ErrorCode != kerr.UnknownLeaderEpoch.Code || rp.CurrentLeader.LeaderID != -1 || len(resp.Brokers) != 0 {
		t.Fatalf("%+v, brokers %+v", rp, resp.Brokers)
	}
}

// A Fetch from a broker (ReplicaID before v15, the ReplicaState tag from
// v15) is a follower fetch: it needs CLUSTER_ACTION, and, as no node
// follows a partition by Fetch, is answered as Kafka answers a broker
// outside the replica set.
func TestFetchFromFollower(t *testing.T) {
	h, _ := startAuthzServer(t, func(r acl.Request) bool { return r.Operation != acl.OpClusterAction })
	c := h.dial()
	for _, v := range []int16{12, 15, 18} {
		req := fetchRequest(v, "t", 0, 1, 0)
		if v >= 13 {
			req.Topics[0].TopicID = idOfTopic(t, h, "t")
		}
		if v >= 15 {
			req.ReplicaState.ID, req.ReplicaState.Epoch = 2, 1
		} else {
			req.ReplicaID = 2
		}
		if rp := fetch(t, c, req).Topics[0].Partitions[0]; rp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("v%d without CLUSTER_ACTION: %+v", v, rp)
		}
	}
	// Kafka refuses an unauthorized follower before it looks at the ids.
	unknown := fetchByID(15, [16]byte{0xEE}, 0)
	unknown.ReplicaState.ID = 2
	if rp := fetch(t, c, unknown).Topics[0].Partitions[0]; rp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("unknown id without CLUSTER_ACTION: %+v", rp)
	}
	h2, _ := startAuthzServer(t, func(r acl.Request) bool { return r.Operation == acl.OpClusterAction })
	c2 := h2.dial()
	req := fetchByID(15, idOfTopic(t, h2, "t"), 0)
	req.ReplicaState.ID = 2
	if rp := fetch(t, c2, req).Topics[0].Partitions[0]; rp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower without an epoch: %+v", rp)
	}
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = 5
	if rp := fetch(t, c2, req).Topics[0].Partitions[0]; rp.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("follower in the leader's epoch: %+v", rp)
	}
	// A consumer (-1) with READ but no CLUSTER_ACTION reads as before.
	if rp := fetch(t, h.dial(), fetchByID(15, idOfTopic(t, h, "t"), 0)).Topics[0].Partitions[0]; rp.ErrorCode != 0 {
		t.Fatalf("consumer: %+v", rp)
	}
}

// countingIDs is the fake backend with the TopicIDs capability, counting
// the lookups.
type countingIDs struct {
	*fakeBackend
	lookups atomic.Int64
}

func (b *countingIDs) TopicNameByID(id [16]byte) (string, bool) {
	b.lookups.Add(1)
	if t := findTopicID(b.fakeBackend.Cluster().Topics, id); t != nil {
		return t.Name, true
	}
	return "", false
}

// franz-go picks Fetch v18 by itself, naming its topics by id, and
// consumes what is in the log through it.
func TestKgoFetchesByTopicID(t *testing.T) {
	var ids *countingIDs
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend {
		ids = &countingIDs{fakeBackend: fb}
		return ids
	})
	p := h.fb.addTopic("t", 1)[0]
	p.append(makeBatch(1, "a", "b"))
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addr), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %v: %v", got, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"a", "b"}) || ids.lookups.Load() == 0 {
		t.Fatalf("consumed %v with %d topic id lookups", got, ids.lookups.Load())
	}
}
