package groupcoord

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBadInputs sends each refused request to a stable group and checks
// the answer, and that neither the stored state (the View) nor the live
// state changed.
func TestBadInputs(t *testing.T) {
	h := newHarness(t, nil)
	const g = "g"
	a, gen := h.stableOne(g, nil)
	for _, code := range h.commit(commitReq(8, g, a, gen, "t1", map[int32]int64{0: 5}, "")) {
		wantCode(t, "setup commit", code, nil)
	}
	ctx := context.Background()
	bigMeta := string(make([]byte, DefaultMaxOffsetMetadata+1))
	withProtocols := func(req *kmsg.JoinGroupRequest, ptype string, ps ...kmsg.JoinGroupRequestProtocol) *kmsg.JoinGroupRequest {
		req.ProtocolType, req.Protocols = ptype, ps
		return req
	}
	huge := kmsg.NewJoinGroupRequestProtocol()
	huge.Name, huge.Metadata = "range", make([]byte, 2<<20)
	other := kmsg.NewJoinGroupRequestProtocol()
	other.Name, other.Metadata = "sticky", consumerMeta("t1")
	syncV5 := func(ptype, protocol string) *kmsg.SyncGroupRequest {
		req := syncReq(5, g, a, nil, gen, nil)
		req.ProtocolType, req.Protocol = &ptype, &protocol
		return req
	}
	firstCommitErr := func(req *kmsg.OffsetCommitRequest) int16 { return h.commit(req)[0] }
	joinErr := func(req *kmsg.JoinGroupRequest) int16 {
		return h.c.JoinGroup(ctx, "c", "/h", req).ErrorCode
	}
	instX := "x"
	longID := strings.Repeat("g", MaxGroupIDBytes+1) // flexible versions carry it; ListGroups v0 cannot
	longInst := strings.Repeat("i", MaxGroupIDBytes-32)

	for _, tc := range []struct {
		name string
		do   func() int16
		want *kerr.Error
	}{
		{"join empty group id", func() int16 { return joinErr(joinReq(9, "", "", nil, time.Second)) }, kerr.InvalidGroupID},
		{"join group id past an int16 string", func() int16 { return joinErr(joinReq(9, longID, "", nil, time.Second)) }, kerr.InvalidGroupID},
		{"join instance id that would make a member id past an int16 string", func() int16 {
			return joinErr(joinReq(9, g, "", &longInst, time.Second))
		}, kerr.InvalidRequest},
		{"commit group id past an int16 string", func() int16 {
			return firstCommitErr(commitReq(8, longID, "", -1, "t1", map[int32]int64{0: 1}, ""))
		}, kerr.InvalidGroupID},
		{"sync empty group id", func() int16 { return h.sync(syncReq(5, "", a, nil, gen, nil)).ErrorCode }, kerr.InvalidGroupID},
		{"heartbeat empty group id", func() int16 { return h.heartbeat(4, "", a, nil, gen) }, kerr.InvalidGroupID},
		{"leave v0 empty group id", func() int16 { return h.leave(0, "", leaving(a, nil)).ErrorCode }, kerr.InvalidGroupID},
		{"leave v5 empty group id", func() int16 { return h.leave(5, "", leaving(a, nil)).ErrorCode }, kerr.InvalidGroupID},
		{"offset delete empty group id", func() int16 {
			return h.c.OffsetDelete(ctx, offsetDeleteReq("", "t2", 0)).ErrorCode
		}, kerr.InvalidGroupID},
		{"session timeout too short", func() int16 { return joinErr(joinReq(9, g, "", nil, time.Millisecond)) }, kerr.InvalidSessionTimeout},
		{"session timeout too long", func() int16 { return joinErr(joinReq(9, g, "", nil, 2*time.Minute)) }, kerr.InvalidSessionTimeout},
		{"session timeout of a member", func() int16 { return joinErr(joinReq(9, g, a, nil, time.Hour)) }, kerr.InvalidSessionTimeout},
		{"no protocols", func() int16 { return joinErr(withProtocols(joinReq(3, g, "", nil, time.Second), "consumer")) }, kerr.InconsistentGroupProtocol},
		{"no protocols, new group", func() int16 { return joinErr(withProtocols(joinReq(3, "new", "", nil, time.Second), "consumer")) }, kerr.InconsistentGroupProtocol},
		{"no protocol type, new group", func() int16 { return joinErr(withProtocols(joinReq(3, "new", "", nil, time.Second), "", other)) }, kerr.InconsistentGroupProtocol},
		{"other protocol type", func() int16 { return joinErr(withProtocols(joinReq(3, g, "", nil, time.Second), "connect", other)) }, kerr.InconsistentGroupProtocol},
		{"no common protocol", func() int16 { return joinErr(withProtocols(joinReq(3, g, "", nil, time.Second), "consumer", other)) }, kerr.InconsistentGroupProtocol},
		{"megabytes of metadata", func() int16 { return joinErr(withProtocols(joinReq(3, g, "", nil, time.Second), "consumer", huge)) }, kerr.InvalidRequest},
		{"megabytes of metadata, member", func() int16 { return joinErr(withProtocols(joinReq(9, g, a, nil, time.Second), "consumer", huge)) }, kerr.InvalidRequest},
		{"join unknown member", func() int16 { return joinErr(joinReq(9, g, "nobody", nil, time.Second)) }, kerr.UnknownMemberID},
		{"join unknown static member", func() int16 { return joinErr(joinReq(9, g, a, &instX, time.Second)) }, kerr.UnknownMemberID},
		{"heartbeat unknown member", func() int16 { return h.heartbeat(4, g, "nobody", nil, gen) }, kerr.UnknownMemberID},
		{"heartbeat unknown group", func() int16 { return h.heartbeat(4, "nogroup", a, nil, gen) }, kerr.UnknownMemberID},
		{"heartbeat stale generation", func() int16 { return h.heartbeat(4, g, a, nil, gen-1) }, kerr.IllegalGeneration},
		{"heartbeat unknown instance", func() int16 { return h.heartbeat(4, g, a, &instX, gen) }, kerr.UnknownMemberID},
		{"sync unknown member", func() int16 { return h.sync(syncReq(5, g, "nobody", nil, gen, nil)).ErrorCode }, kerr.UnknownMemberID},
		{"sync unknown group", func() int16 { return h.sync(syncReq(5, "nogroup", a, nil, gen, nil)).ErrorCode }, kerr.UnknownMemberID},
		{"sync stale generation", func() int16 { return h.sync(syncReq(5, g, a, nil, gen+1, nil)).ErrorCode }, kerr.IllegalGeneration},
		{"sync v5 protocol type", func() int16 { return h.sync(syncV5("connect", "range")).ErrorCode }, kerr.InconsistentGroupProtocol},
		{"sync v5 protocol", func() int16 { return h.sync(syncV5("consumer", "sticky")).ErrorCode }, kerr.InconsistentGroupProtocol},
		{"leave v0 unknown member", func() int16 { return h.leave(0, g, leaving("nobody", nil)).ErrorCode }, kerr.UnknownMemberID},
		{"leave v3 unknown member", func() int16 { return h.leave(3, g, leaving("nobody", nil)).Members[0].ErrorCode }, kerr.UnknownMemberID},
		{"leave v5 unknown instance", func() int16 { return h.leave(5, g, leaving(a, &instX)).Members[0].ErrorCode }, kerr.UnknownMemberID},
		{"leave unknown group", func() int16 { return h.leave(5, "nogroup", leaving(a, nil)).Members[0].ErrorCode }, kerr.UnknownMemberID},
		{"commit unknown topic", func() int16 { return firstCommitErr(commitReq(8, g, a, gen, "nope", map[int32]int64{0: 1}, "")) }, kerr.UnknownTopicOrPartition},
		{"commit stale generation", func() int16 { return firstCommitErr(commitReq(8, g, a, gen-1, "t1", map[int32]int64{0: 1}, "")) }, kerr.IllegalGeneration},
		{"commit unknown member", func() int16 { return firstCommitErr(commitReq(8, g, "nobody", gen, "t1", map[int32]int64{0: 1}, "")) }, kerr.UnknownMemberID},
		{"commit unknown instance", func() int16 {
			return firstCommitErr(withInstance(commitReq(8, g, a, gen, "t1", map[int32]int64{0: 1}, ""), &instX))
		}, kerr.UnknownMemberID},
		{"simple commit to a stable group", func() int16 { return firstCommitErr(commitReq(8, g, "", -1, "t1", map[int32]int64{0: 1}, "")) }, kerr.UnknownMemberID},
		{"v0 commit to a stable group", func() int16 { return firstCommitErr(commitReq(0, g, "", -1, "t1", map[int32]int64{0: 1}, "")) }, kerr.UnknownMemberID},
		{"commit for a generation of an unknown group", func() int16 {
			return firstCommitErr(commitReq(8, "nogroup", "m", 3, "t1", map[int32]int64{0: 1}, ""))
		}, kerr.IllegalGeneration},
		{"member commit to an unknown group", func() int16 {
			return firstCommitErr(commitReq(8, "nogroup", "m", -1, "t1", map[int32]int64{0: 1}, ""))
		}, kerr.UnknownMemberID},
		{"commit metadata too large", func() int16 { return firstCommitErr(commitReq(8, g, a, gen, "t1", map[int32]int64{0: 1}, bigMeta)) }, kerr.OffsetMetadataTooLarge},
		{"commit, log lost leadership", func() int16 {
			h.log.setFail(kerr.NotLeaderForPartition)
			defer h.log.setFail(nil)
			return firstCommitErr(commitReq(8, g, a, gen, "t1", map[int32]int64{0: 1}, ""))
		}, kerr.NotCoordinator},
		{"commit, log timed out", func() int16 {
			h.log.setFail(kerr.RequestTimedOut)
			defer h.log.setFail(nil)
			return firstCommitErr(commitReq(8, g, a, gen, "t1", map[int32]int64{0: 1}, ""))
		}, kerr.CoordinatorNotAvailable},
		{"offset delete of a subscribed topic", func() int16 {
			return h.c.OffsetDelete(ctx, offsetDeleteReq(g, "t1", 0)).Topics[0].Partitions[0].ErrorCode
		}, kerr.GroupSubscribedToTopic},
		{"offset delete unknown group", func() int16 { return h.c.OffsetDelete(ctx, offsetDeleteReq("nogroup", "t1", 0)).ErrorCode }, kerr.GroupIDNotFound},
		{"delete a stable group", func() int16 { return codeOf(h.c.DeleteGroup(ctx, g)) }, kerr.NonEmptyGroup},
		{"delete unknown group", func() int16 { return codeOf(h.c.DeleteGroup(ctx, "nogroup")) }, kerr.GroupIDNotFound},
	} {
		before := h.view.AppendSnapshot(nil)
		d := h.describe(g)
		if got := tc.do(); got != codeOf(tc.want) {
			t.Errorf("%s: got %s, want %s", tc.name, errName(got), errName(codeOf(tc.want)))
		}
		if tc.want != nil && !bytes.Equal(before, h.view.AppendSnapshot(nil)) {
			t.Errorf("%s: the view changed:\n%s", tc.name, dump(h.view))
		}
		if after := h.describe(g); after.State != "Stable" || len(after.Members) != 1 || d.Members[0].MemberID != a ||
			!bytes.Equal(after.Members[0].MemberAssignment, d.Members[0].MemberAssignment) {
			t.Errorf("%s: the group changed: %+v", tc.name, after)
		}
		if code := h.heartbeat(4, g, a, nil, gen); code != 0 {
			t.Errorf("%s: heartbeat after: %s", tc.name, errName(code))
		}
	}
	if gs := h.c.ListGroups(nil, nil); len(gs) != 1 || gs[0].Group != g {
		t.Errorf("refused requests left groups behind: %+v", gs)
	}
	if o, _ := h.fetch(g, "t1", 0); o != 5 {
		t.Errorf("offset %d, want 5", o)
	}
}

// TestCommitMixedPartitions: in one commit, partitions refused for their
// own reasons do not stop the others.
func TestCommitMixedPartitions(t *testing.T) {
	h := newHarness(t, nil)
	req := commitReq(8, "g", "", -1, "t1", map[int32]int64{0: 1, 1: 2}, "")
	big := string(make([]byte, DefaultMaxOffsetMetadata+1))
	req.Topics[0].Partitions[1].Metadata = &big
	unknown := kmsg.NewOffsetCommitRequestTopic()
	unknown.Topic = "nope"
	unknown.Partitions = req.Topics[0].Partitions[:1]
	req.Topics = append(req.Topics, unknown)
	got := h.commit(req)
	want := []int16{0, kerr.OffsetMetadataTooLarge.Code, kerr.UnknownTopicOrPartition.Code}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("got %v, want %v", got, want)
	}
	if offs := h.view.Offsets("g"); len(offs) != 1 || offs[0].Partition != 0 || offs[0].Offset.Offset != 1 {
		t.Fatalf("stored: %+v", offs)
	}
}

func offsetDeleteReq(group, topic string, partitions ...int32) *kmsg.OffsetDeleteRequest {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = group
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetDeleteRequestTopic{rt}
	return req
}

func codeOf(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}

// TestLongClientIDMemberID: a member id made from a client id as long as a
// request header carries still fits a non-flexible string, which
// DescribeGroups v0-v4 and JoinGroup v0-v5 answers must encode it in.
func TestLongClientIDMemberID(t *testing.T) {
	h := newHarness(t, nil)
	client := strings.Repeat("c", MaxGroupIDBytes)
	seen := map[string]bool{}
	for range 2 {
		resp := h.c.JoinGroup(context.Background(), client, "/h", joinReq(4, "g", "", nil, time.Second))
		if resp.ErrorCode != kerr.MemberIDRequired.Code {
			t.Fatalf("join: %v, want MEMBER_ID_REQUIRED", kerr.ErrorForCode(resp.ErrorCode))
		}
		if n := len(resp.MemberID); n > MaxGroupIDBytes || !strings.HasPrefix(resp.MemberID, "ccc") {
			t.Fatalf("member id of %d bytes (%.8q), want at most %d, from the client id", n, resp.MemberID, MaxGroupIDBytes)
		}
		seen[resp.MemberID] = true
	}
	if len(seen) != 2 {
		t.Fatal("two joins were given the same member id")
	}
}
