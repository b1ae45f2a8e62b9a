package kafkaapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceV13TopicIDs: Produce v13 names topics by id; a known id
// writes to its topic, an unknown one is UNKNOWN_TOPIC_ID, each answered
// under its id.
func TestProduceV13TopicIDs(t *testing.T) {
	h := startServer(t, Config{})
	ps := h.fb.addTopic("t", 1)
	id := h.fb.Cluster().Topics[0].ID
	c := h.dial()
	req := produceRequest(13, -1, "", map[int32][]byte{0: makeBatch(1, "a")})
	req.Topics[0].TopicID = id
	unknown := kmsg.NewProduceRequestTopic()
	unknown.TopicID = [16]byte{9, 9, 9}
	up := kmsg.NewProduceRequestTopicPartition()
	up.Records = makeBatch(1, "b")
	unknown.Partitions = append(unknown.Partitions, up)
	req.Topics = append(req.Topics, unknown)
	resp := produce(t, c, req)
	if len(resp.Topics) != 2 || resp.Topics[0].TopicID != id || resp.Topics[1].TopicID != unknown.TopicID {
		t.Fatalf("topics %+v", resp.Topics)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("known id: %+v", p)
	}
	if p := resp.Topics[1].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(p.ErrorCode))
	}
	if len(ps[0].batches()) != 1 {
		t.Fatalf("partition holds %d batches, want 1", len(ps[0].batches()))
	}
}

// movedBackend reports partition 0 of every topic led by node 2.
type movedBackend struct{ *fakeBackend }

func (b movedBackend) Cluster() ClusterView {
	v := b.fakeBackend.Cluster()
	v.Brokers = append(v.Brokers, Broker{NodeID: 2, Host: "other.example", Port: 9093, Rack: "r2"})
	for i := range v.Topics {
		v.Topics[i].Partitions[0].Leader, v.Topics[i].Partitions[0].LeaderEpoch = 2, 7
	}
	return v
}

// TestProduceV10LeaderHints (KIP-951): from v10 a partition answered
// NOT_LEADER_OR_FOLLOWER carries its current leader and epoch, and the
// response that leader's endpoint; before v10 neither.
func TestProduceV10LeaderHints(t *testing.T) {
	for _, version := range []int16{9, 10, 12} {
		h := startServerWith(t, Config{}, func(f *fakeBackend) Backend { return movedBackend{f} })
		ps := h.fb.addTopic("t", 1)
		ps[0].set(func(p *fakePartition) { p.leader = false })
		resp := produce(t, h.dial(), produceRequest(version, -1, "t", map[int32][]byte{0: makeBatch(1, "a")}))
		p := partitionResult(t, resp, "t", 0)
		if p.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("v%d: %v", version, kerr.ErrorForCode(p.ErrorCode))
		}
		if version < 10 {
			continue
		}
		if p.CurrentLeader.LeaderID != 2 || p.CurrentLeader.LeaderEpoch != 7 {
			t.Fatalf("v%d: current leader %+v, want 2 at epoch 7", version, p.CurrentLeader)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 2 || resp.Brokers[0].Host != "other.example" ||
			resp.Brokers[0].Port != 9093 || resp.Brokers[0].Rack == nil || *resp.Brokers[0].Rack != "r2" {
			t.Fatalf("v%d: brokers %+v", version, resp.Brokers)
		}
	}
}
