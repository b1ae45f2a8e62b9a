package kafkaapi

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// cgCoordinator answers ConsumerGroupHeartbeat and ConsumerGroupDescribe:
// the heartbeat reports whether its canDescribe allows "t" and "hidden",
// the description assigns "hidden" to a member when withHidden.
type cgCoordinator struct {
	baseGroupCoordinator
	sawT, sawHidden bool
	withHidden      bool
}

func (f *cgCoordinator) ConsumerGroupHeartbeat(_ context.Context, _, _ string, canDescribe func(string) bool, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	f.sawT, f.sawHidden = canDescribe("t"), canDescribe("hidden")
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.MemberEpoch = 1
	return resp
}

func (f *cgCoordinator) DescribeConsumerGroup(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	g := kmsg.NewConsumerGroupDescribeResponseGroup()
	g.Group, g.State = group, "Stable"
	m := kmsg.NewConsumerGroupDescribeResponseGroupMember()
	tp := kmsg.NewAssignmentTopicPartition()
	tp.Topic = "t"
	if f.withHidden {
		tp.Topic = "hidden"
	}
	m.Assignment.TopicPartitions = []kmsg.AssignmentTopicPartition{tp}
	g.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{m}
	return g
}

// The KIP-848 APIs check ACLs as Kafka does: READ on the group for a
// heartbeat and DESCRIBE on each topic it names; DESCRIBE on the group
// for a description, which fails TOPIC_AUTHORIZATION_FAILED if a member's
// assignment holds a topic the client may not DESCRIBE; a regex
// subscription is limited to the topics the client may DESCRIBE.
func TestConsumerGroupAPIsACLs(t *testing.T) {
	h, _ := startAuthzServer(t, func(r acl.Request) bool {
		switch r.Resource {
		case acl.ResourceGroup:
			return r.Name == "g"
		case acl.ResourceTopic:
			return r.Name == "t" && r.Operation == acl.OpDescribe
		}
		return false
	})
	coord := &cgCoordinator{}
	h.fb.set(func(b *fakeBackend) { b.groups.coordOverride = coord })
	c := h.dial()
	heartbeat := func(group string, topics ...string) int16 {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.SubscribedTopicNames = 1, group, "m", topics
		return c.roundTrip(req).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode
	}
	describe := func(group string) int16 {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version, req.Groups = 1, []string{group}
		return c.roundTrip(req).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode
	}
	check := func(what string, got int16, want *kerr.Error) {
		t.Helper()
		var w int16
		if want != nil {
			w = want.Code
		}
		if got != w {
			t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
		}
	}
	check("heartbeat, group denied", heartbeat("other", "t"), kerr.GroupAuthorizationFailed)
	check("heartbeat, topic not describable", heartbeat("g", "t", "hidden"), kerr.TopicAuthorizationFailed)
	check("heartbeat", heartbeat("g", "t"), nil)
	if !coord.sawT || coord.sawHidden {
		t.Errorf("the coordinator's canDescribe allowed t=%v hidden=%v, want true and false", coord.sawT, coord.sawHidden)
	}
	check("describe, group denied", describe("other"), kerr.GroupAuthorizationFailed)
	check("describe", describe("g"), nil)
	coord.withHidden = true
	check("describe, assignment not describable", describe("g"), kerr.TopicAuthorizationFailed)
}

// OffsetCommit and OffsetFetch v10 name topics by id: known ids reach the
// coordinator by name and come back by id; unknown ids are
// UNKNOWN_TOPIC_ID. A LeaderLookup backend maps them without Cluster's
// view (every KIP-848 member commits every few seconds).
func TestOffsetsByTopicID(t *testing.T) {
	t.Run("cluster view", func(t *testing.T) { testOffsetsByTopicID(t, false) })
	t.Run("lookup", func(t *testing.T) { testOffsetsByTopicID(t, true) })
}

func testOffsetsByTopicID(t *testing.T, lookup bool) {
	coord := &fakeCoordinator{}
	calls := new(atomic.Int32)
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend {
		if lookup {
			return lookupElsewhere{leaderElsewhere{fb}, calls}
		}
		return fb
	})
	h.fb.set(func(b *fakeBackend) { b.groups = fakeGroups{coord: coord} })
	c := h.dial()
	h.fb.addTopic("t", 2)
	var id [16]byte
	for _, tv := range h.fb.Cluster().Topics {
		if tv.Name == "t" {
			id = tv.ID
		}
	}
	if id == ([16]byte{}) {
		t.Fatal("topic t has no id")
	}
	unknown := [16]byte{9, 9}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 10, "g", -1
	for _, tid := range [][16]byte{id, unknown} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 1, 5
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
		commit.Topics = append(commit.Topics, rt)
	}
	cr := c.roundTrip(commit).(*kmsg.OffsetCommitResponse)
	if len(cr.Topics) != 1 || cr.Topics[0].TopicID != unknown || cr.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("commit v10 answered %+v; want the unknown id's UNKNOWN_TOPIC_ID (the fake coordinator answers nothing)", cr.Topics)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 10
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "g"
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{TopicID: id, Partitions: []int32{1}}, {TopicID: unknown, Partitions: []int32{0}}}
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{g}
	fr := c.roundTrip(fetch).(*kmsg.OffsetFetchResponse).Groups[0]
	if len(fr.Topics) != 2 || fr.Topics[0].TopicID != id || fr.Topics[0].Partitions[0].Offset != 11 ||
		fr.Topics[1].TopicID != unknown || fr.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("fetch v10 answered %+v", fr.Topics)
	}
	if got := coord.fetched[len(coord.fetched)-1]; len(got) != 1 || got[0].Topic != "t" {
		t.Fatalf("the coordinator was asked for %+v, want t by name", got)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("Cluster built %d times", n)
	}
}
