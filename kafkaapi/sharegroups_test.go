package kafkaapi

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// shareCoordinator answers ShareGroupHeartbeat and ShareGroupDescribe;
// the description assigns "hidden" to a member when withHidden.
type shareCoordinator struct {
	baseGroupCoordinator
	withHidden bool
	beats      int
}

func (f *shareCoordinator) ShareGroupHeartbeat(_ context.Context, _, _ string, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	f.beats++
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.MemberEpoch = 1
	return resp
}

func (f *shareCoordinator) DescribeShareGroup(group string) kmsg.ShareGroupDescribeResponseGroup {
	g := kmsg.NewShareGroupDescribeResponseGroup()
	g.GroupID, g.GroupState = group, "Stable"
	m := kmsg.NewShareGroupDescribeResponseGroupMember()
	tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
	tp.Topic = "t"
	if f.withHidden {
		tp.Topic = "hidden"
	}
	m.Assignment.TopicPartitions = append(m.Assignment.TopicPartitions, tp)
	g.Members = []kmsg.ShareGroupDescribeResponseGroupMember{m}
	return g
}

// The share group APIs check ACLs as Kafka does: READ on the group for a
// heartbeat (DESCRIBE is not enough) and DESCRIBE on each subscribed
// topic; DESCRIBE on the group for a description, which fails
// TOPIC_AUTHORIZATION_FAILED, showing nothing else, if a member's
// assignment holds a topic the client may not DESCRIBE.
func TestShareGroupAPIsACLs(t *testing.T) {
	h, _ := startAuthzServer(t, func(r acl.Request) bool {
		switch r.Resource {
		case acl.ResourceGroup:
			return r.Name == "g" || (r.Name == "d" && r.Operation == acl.OpDescribe)
		case acl.ResourceTopic:
			return r.Name == "t" && r.Operation == acl.OpDescribe
		}
		return false
	})
	coord := &shareCoordinator{}
	h.fb.set(func(b *fakeBackend) { b.groups.coordOverride = coord })
	c := h.dial()
	heartbeat := func(group string, topics ...string) int16 {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version, req.GroupID, req.MemberID, req.SubscribedTopicNames = 1, group, "m", topics
		return c.roundTrip(req).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
	}
	describe := func(group string) kmsg.ShareGroupDescribeResponseGroup {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.Version, req.GroupIDs = 1, []string{group}
		return c.roundTrip(req).(*kmsg.ShareGroupDescribeResponse).Groups[0]
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
	check("heartbeat, only DESCRIBE on the group", heartbeat("d", "t"), kerr.GroupAuthorizationFailed)
	check("heartbeat, topic not describable", heartbeat("g", "t", "hidden"), kerr.TopicAuthorizationFailed)
	if coord.beats != 0 {
		t.Errorf("%d refused heartbeats reached the coordinator", coord.beats)
	}
	check("heartbeat", heartbeat("g", "t"), nil)
	check("describe, group denied", describe("other").ErrorCode, kerr.GroupAuthorizationFailed)
	check("describe with DESCRIBE on the group", describe("d").ErrorCode, nil)
	coord.withHidden = true
	if g := describe("g"); g.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(g.Members) != 0 || g.GroupState != "" {
		t.Errorf("describe, assignment not describable: %v with %d members, state %q", kerr.ErrorForCode(g.ErrorCode), len(g.Members), g.GroupState)
	}
}
