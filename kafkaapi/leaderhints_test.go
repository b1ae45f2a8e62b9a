package kafkaapi

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// lookupElsewhere is leaderElsewhere with a LeaderLookup, counting the
// calls of Cluster, which the requests below must not need.
type lookupElsewhere struct {
	leaderElsewhere
	clusterCalls *atomic.Int32
}

func (b lookupElsewhere) Cluster() ClusterView {
	b.clusterCalls.Add(1)
	return b.leaderElsewhere.Cluster()
}

func (b lookupElsewhere) ClusterBrokers() ClusterView {
	v := b.leaderElsewhere.Cluster()
	v.Topics = nil
	return v
}

func (b lookupElsewhere) TopicView(name string) (TopicView, bool) {
	for _, tv := range b.leaderElsewhere.Cluster().Topics {
		if tv.Name == name {
			return tv, true
		}
	}
	return TopicView{}, false
}

// TopicNameByID is the backend's own (TopicIDs), as the node's is.
func (b lookupElsewhere) TopicNameByID(id [16]byte) (string, bool) {
	if t := findTopicID(b.leaderElsewhere.Cluster().Topics, id); t != nil {
		return t.Name, true
	}
	return "", false
}

func (b lookupElsewhere) TopicNames() []string {
	var names []string
	for _, tv := range b.leaderElsewhere.Cluster().Topics {
		names = append(names, tv.Name)
	}
	slices.Sort(names)
	return names
}

func (b lookupElsewhere) TopicIDByName(name string) ([16]byte, bool) {
	t, ok := b.TopicView(name)
	return t.ID, ok
}

func (b lookupElsewhere) PartitionLeader(topic string, p int32) (int32, int32, bool) {
	for _, tv := range b.leaderElsewhere.Cluster().Topics {
		if i := slices.IndexFunc(tv.Partitions, func(pv PartitionView) bool { return pv.Partition == p }); tv.Name == topic && i >= 0 {
			pv := tv.Partitions[i]
			return pv.Leader, pv.LeaderEpoch, pv.Leader >= 0
		}
	}
	return -1, -1, false
}

// With a LeaderLookup backend, the leader hints of Produce and Fetch,
// FindCoordinator's endpoint and a Metadata request that names its topics
// are what Cluster's view gives, without building it: its cost grows with
// the cluster's partitions.
func TestLeaderHintsWithoutTheClusterView(t *testing.T) {
	calls := new(atomic.Int32)
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend {
		return lookupElsewhere{leaderElsewhere{fb}, calls}
	})
	parts := h.fb.addTopic("t", 2)
	for _, part := range parts {
		part.set(func(p *fakePartition) { p.leader = false })
	}
	h.fb.set(func(b *fakeBackend) { b.groups = fakeGroups{node: 2, coord: &fakeCoordinator{}} })
	id := idOfTopic(t, h, "t")
	c := h.dial()
	calls.Store(0)

	resp := produce(t, c, produceRequest(12, -1, "t", map[int32][]byte{1: makeBatch(1, "a")}))
	p := partitionResult(t, resp, "t", 1)
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != 2 || p.CurrentLeader.LeaderEpoch != 7 {
		t.Fatalf("produce: %+v", p)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 2 || resp.Brokers[0].Host != "node2.example" {
		t.Fatalf("produce brokers %+v", resp.Brokers)
	}

	fr := fetch(t, c, fetchRequest(12, "t", 0, 1, 0, 0))
	if len(fr.Brokers) != 0 {
		t.Fatalf("fetch v12 brokers %+v", fr.Brokers)
	}
	req := fetchRequest(16, "t", 0, 1, 0, 0)
	req.Topics[0].TopicID = id
	fr = fetch(t, c, req)
	for _, rp := range fr.Topics[0].Partitions {
		if rp.ErrorCode != kerr.NotLeaderForPartition.Code || rp.CurrentLeader.LeaderID != 2 || rp.CurrentLeader.LeaderEpoch != 7 {
			t.Fatalf("fetch: %+v", rp)
		}
	}
	if len(fr.Brokers) != 1 || fr.Brokers[0].NodeID != 2 || fr.Brokers[0].Port != 9093 {
		t.Fatalf("fetch brokers %+v", fr.Brokers)
	}

	fc := c.roundTrip(findCoordinatorRequest(0, "g")).(*kmsg.FindCoordinatorResponse)
	if fc.ErrorCode != 0 || fc.NodeID != 2 || fc.Host != "node2.example" || fc.Port != 9093 {
		t.Fatalf("find coordinator: %+v", fc)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	byName, byID := kmsg.NewMetadataRequestTopic(), kmsg.NewMetadataRequestTopic()
	byName.Topic, byID.TopicID = kmsg.StringPtr("t"), id
	missing := kmsg.NewMetadataRequestTopic()
	missing.Topic = kmsg.StringPtr("nope")
	md.Topics = []kmsg.MetadataRequestTopic{byName, missing}
	mr := c.roundTrip(md).(*kmsg.MetadataResponse)
	if len(mr.Topics) != 2 || len(mr.Topics[0].Partitions) != 2 || mr.Topics[0].Partitions[1].Leader != 2 ||
		mr.Topics[0].Partitions[1].LeaderEpoch != 7 || mr.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata: %+v", mr.Topics)
	}
	if !slices.ContainsFunc(mr.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == 2 && b.Host == "node2.example" }) {
		t.Fatalf("metadata brokers %+v", mr.Brokers)
	}
	md.Topics = []kmsg.MetadataRequestTopic{byID}
	mr = c.roundTrip(md).(*kmsg.MetadataResponse)
	if len(mr.Topics) != 1 || mr.Topics[0].Topic == nil || *mr.Topics[0].Topic != "t" || len(mr.Topics[0].Partitions) != 2 {
		t.Fatalf("metadata by id: %+v", mr.Topics)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("Cluster built %d times", n)
	}
}
