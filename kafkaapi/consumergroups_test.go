package kafkaapi

import (
	"context"
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
