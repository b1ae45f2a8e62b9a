package kafkaapi

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeGroups routes every group to one recording coordinator, or fails
// with err; node is the coordinator's node id.
type fakeGroups struct {
	node    int32
	err     error // of CoordinatorNode and GroupCoordinator
	listErr error // of GroupCoordinators
	coord   *fakeCoordinator
	// coordOverride, if set, is the coordinator of every group instead.
	coordOverride GroupCoordinator
}

func (b *fakeBackend) CoordinatorNode(ctx context.Context, group string) (int32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.groups.node, b.groups.err
}

func (b *fakeBackend) GroupCoordinator(ctx context.Context, group string) (GroupCoordinator, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.groups.err != nil:
		return nil, b.groups.err
	case b.groups.coordOverride != nil:
		return b.groups.coordOverride, nil
	case b.groups.coord == nil:
		return nil, kerr.CoordinatorNotAvailable
	}
	return b.groups.coord, nil
}

func (b *fakeBackend) GroupCoordinators() ([]GroupCoordinator, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.groups.coord == nil {
		return nil, b.groups.listErr
	}
	return []GroupCoordinator{b.groups.coord}, b.groups.listErr
}

// fakeCoordinator answers every request but TxnOffsetCommit (which is
// baseGroupCoordinator's) with a marker that shows the request reached
// it, and records what it was given.
type fakeCoordinator struct {
	baseGroupCoordinator
	joinClient, joinHost string
	fetched              [][]kmsg.OffsetFetchRequestGroupTopic
}

func (f *fakeCoordinator) JoinGroup(_ context.Context, clientID, clientHost string, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	f.joinClient, f.joinHost = clientID, clientHost
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.MemberID, resp.Generation = "m-1", 1
	return resp
}

func (f *fakeCoordinator) SyncGroup(_ context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.MemberAssignment = []byte("a")
	return resp
}

func (f *fakeCoordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = kerr.RebalanceInProgress.Code
	return resp
}

func (f *fakeCoordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	return req.ResponseKind().(*kmsg.LeaveGroupResponse)
}

func (f *fakeCoordinator) OffsetCommit(_ context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	return req.ResponseKind().(*kmsg.OffsetCommitResponse)
}

func (f *fakeCoordinator) OffsetDelete(_ context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.ErrorCode = kerr.GroupIDNotFound.Code
	return resp
}

// FetchOffsets answers offset 10+partition for what it is asked, and one
// partition of topic "all" when asked for everything.
func (f *fakeCoordinator) FetchOffsets(group string, topics []kmsg.OffsetFetchRequestGroupTopic, _ bool) kmsg.OffsetFetchResponseGroup {
	f.fetched = append(f.fetched, topics)
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group = group
	if topics == nil {
		topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "all", Partitions: []int32{0}}}
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset = p, 10+int64(p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		g.Topics = append(g.Topics, rt)
	}
	return g
}

// DescribeGroup describes every group as Stable but "modern", which it
// answers as groupcoord does a consumer or share group.
func (f *fakeCoordinator) DescribeGroup(group string) kmsg.DescribeGroupsResponseGroup {
	g := kmsg.NewDescribeGroupsResponseGroup()
	g.Group, g.State = group, "Stable"
	if group == "modern" {
		msg := "Group modern is not a classic group."
		g.State, g.ErrorCode, g.ErrorMessage = "Dead", kerr.GroupIDNotFound.Code, &msg
	}
	return g
}

func (f *fakeCoordinator) ListGroups(states, types []string) []kmsg.ListGroupsResponseGroup {
	g := kmsg.NewListGroupsResponseGroup()
	g.Group, g.ProtocolType, g.GroupState = "g", "consumer", "Stable"
	return []kmsg.ListGroupsResponseGroup{g}
}

func (f *fakeCoordinator) DeleteGroup(_ context.Context, group string) *kerr.Error {
	if group == "busy" {
		return kerr.NonEmptyGroup
	}
	return nil
}

func withGroups(t *testing.T, g fakeGroups) (*harness, *client) {
	h := startServer(t, Config{})
	h.fb.set(func(b *fakeBackend) { b.groups = g })
	return h, h.dial()
}

// FindCoordinator answers the coordinator's address at every version, one
// key up to v3 and a batch from v4, and Kafka's errors.
func TestFindCoordinator(t *testing.T) {
	h, c := withGroups(t, fakeGroups{node: 1, coord: &fakeCoordinator{}})
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey = v, "g"
		resp := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		if resp.ErrorCode != 0 || resp.NodeID != 1 || resp.Host != "127.0.0.1" || resp.Port != h.fb.broker.Port {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version, req.CoordinatorKeys = 4, []string{"a", "b"}
	resp := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "b" || resp.Coordinators[1].NodeID != 1 || resp.Coordinators[1].Port != h.fb.broker.Port {
		t.Fatalf("v4: %+v", resp.Coordinators)
	}

	for _, tc := range []struct {
		name    string
		node    int32
		err     error
		keyType int8
		want    *kerr.Error
	}{
		{"not available", 1, fmt.Errorf("%w: no leader", kerr.CoordinatorNotAvailable), 0, kerr.CoordinatorNotAvailable},
		{"dead node", 9, nil, 0, kerr.CoordinatorNotAvailable},
		{"transactions without the capability", 1, nil, coordinatorKeyTransaction, kerr.CoordinatorNotAvailable},
		{"unknown key type", 1, nil, 5, kerr.InvalidRequest},
	} {
		h.fb.set(func(b *fakeBackend) { b.groups = fakeGroups{node: tc.node, err: tc.err} })
		for _, v := range []int16{1, 4} {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version, req.CoordinatorKey, req.CoordinatorKeys, req.CoordinatorType = v, "g", []string{"g"}, tc.keyType
			resp := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
			got := kmsg.FindCoordinatorResponseCoordinator{ErrorCode: resp.ErrorCode, ErrorMessage: resp.ErrorMessage, NodeID: resp.NodeID, Port: resp.Port}
			if v == 4 {
				got = resp.Coordinators[0]
			}
			if got.ErrorCode != tc.want.Code || got.ErrorMessage == nil || got.NodeID != -1 || got.Port != -1 {
				t.Fatalf("%s v%d: %+v, want %s", tc.name, v, got, tc.want.Message)
			}
		}
	}
}

// Requests reach the coordinator with the client id and host; without a
// coordinator every API answers the routing error where Kafka puts it.
func TestGroupAPIsRoute(t *testing.T) {
	fc := &fakeCoordinator{}
	h, c := withGroups(t, fakeGroups{node: 1, coord: fc})
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group = 5, "g"
	if r := c.roundTrip(join).(*kmsg.JoinGroupResponse); r.MemberID != "m-1" || fc.joinClient != "kafkaapi-test" || fc.joinHost != "/127.0.0.1" {
		t.Fatalf("join %+v, client %q host %q", r, fc.joinClient, fc.joinHost)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "g"
	if r := c.roundTrip(hb).(*kmsg.HeartbeatResponse); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat %+v", r)
	}

	h.fb.set(func(b *fakeBackend) { b.groups = fakeGroups{err: kerr.NotCoordinator} })
	nc := kerr.NotCoordinator.Code
	join.MemberID = "m-9"
	if r := c.roundTrip(join).(*kmsg.JoinGroupResponse); r.ErrorCode != nc || r.Generation != -1 || r.MemberID != "m-9" {
		t.Fatalf("join %+v", r)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	if r := c.roundTrip(sync).(*kmsg.SyncGroupResponse); r.ErrorCode != nc {
		t.Fatalf("sync %+v", r)
	}
	if r := c.roundTrip(hb).(*kmsg.HeartbeatResponse); r.ErrorCode != nc {
		t.Fatalf("heartbeat %+v", r)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 5
	if r := c.roundTrip(leave).(*kmsg.LeaveGroupResponse); r.ErrorCode != nc {
		t.Fatalf("leave %+v", r)
	}
	del := kmsg.NewPtrOffsetDeleteRequest()
	if r := c.roundTrip(del).(*kmsg.OffsetDeleteResponse); r.ErrorCode != nc {
		t.Fatalf("offset delete %+v", r)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group = 8, "g"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}, {Partition: 3}}}}
	r := c.roundTrip(commit).(*kmsg.OffsetCommitResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 2 || r.Topics[0].Partitions[1].Partition != 3 || r.Topics[0].Partitions[1].ErrorCode != nc {
		t.Fatalf("commit %+v", r)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"a"}
	if r := c.roundTrip(dg).(*kmsg.DeleteGroupsResponse); len(r.Groups) != 1 || r.Groups[0].ErrorCode != nc {
		t.Fatalf("delete groups %+v", r)
	}
	dsc := kmsg.NewPtrDescribeGroupsRequest()
	dsc.Version, dsc.Groups, dsc.IncludeAuthorizedOperations = 5, []string{"a"}, true
	if r := c.roundTrip(dsc).(*kmsg.DescribeGroupsResponse); len(r.Groups) != 1 || r.Groups[0].ErrorCode != nc || r.Groups[0].AuthorizedOperations != noAuthorizedOperations {
		t.Fatalf("describe %+v", r)
	}
}

// OffsetFetch: v0-7 carry one group (null topics mean all from v2), v8 a
// batch; a routing error lands where each version carries it.
func TestOffsetFetchVersions(t *testing.T) {
	fc := &fakeCoordinator{}
	h, c := withGroups(t, fakeGroups{node: 1, coord: fc})
	for _, v := range []int16{1, 7} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = v, "g"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{2}}}
		r := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
		if len(r.Topics) != 1 || r.Topics[0].Topic != "t" || r.Topics[0].Partitions[0].Offset != 12 {
			t.Fatalf("v%d: %+v", v, r)
		}
	}
	all := kmsg.NewPtrOffsetFetchRequest()
	all.Version, all.Group = 7, "g"
	if r := c.roundTrip(all).(*kmsg.OffsetFetchResponse); len(r.Topics) != 1 || r.Topics[0].Topic != "all" {
		t.Fatalf("v7 all: %+v", r)
	}
	if last := fc.fetched[len(fc.fetched)-1]; last != nil {
		t.Fatalf("v7 null topics reached the coordinator as %v, want nil (all)", last)
	}
	v8 := kmsg.NewPtrOffsetFetchRequest()
	v8.Version = 8
	v8.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "a", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{1}}}}, {Group: "b"}}
	r := c.roundTrip(v8).(*kmsg.OffsetFetchResponse)
	if len(r.Groups) != 2 || r.Groups[0].Group != "a" || r.Groups[0].Topics[0].Partitions[0].Offset != 11 || r.Groups[1].Topics[0].Topic != "all" {
		t.Fatalf("v8: %+v", r)
	}

	h.fb.set(func(b *fakeBackend) { b.groups = fakeGroups{err: kerr.CoordinatorLoadInProgress} })
	code := kerr.CoordinatorLoadInProgress.Code
	for _, v := range []int16{1, 7} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = v, "g"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{2}}}
		r := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
		p := r.Topics[0].Partitions[0]
		if v == 1 && (p.ErrorCode != code || p.Offset != -1) || v == 7 && r.ErrorCode != code {
			t.Fatalf("v%d: %+v", v, r)
		}
	}
	if r := c.roundTrip(v8).(*kmsg.OffsetFetchResponse); r.Groups[0].ErrorCode != code || r.Groups[1].ErrorCode != code {
		t.Fatalf("v8: %+v", r)
	}
}

// DescribeGroups reports the group operations when asked; ListGroups
// gathers the node's coordinators and reports one still loading;
// DeleteGroups answers each group.
func TestGroupAdminAPIs(t *testing.T) {
	h, c := withGroups(t, fakeGroups{node: 1, coord: &fakeCoordinator{}})
	dsc := kmsg.NewPtrDescribeGroupsRequest()
	dsc.Version, dsc.Groups = 5, []string{"a", "b"}
	r := c.roundTrip(dsc).(*kmsg.DescribeGroupsResponse)
	if len(r.Groups) != 2 || r.Groups[1].Group != "b" || r.Groups[1].State != "Stable" || r.Groups[1].AuthorizedOperations != noAuthorizedOperations {
		t.Fatalf("describe %+v", r)
	}
	dsc.IncludeAuthorizedOperations = true
	// READ, DELETE, DESCRIBE: bits 3, 6, 8.
	if r := c.roundTrip(dsc).(*kmsg.DescribeGroupsResponse); r.Groups[0].AuthorizedOperations != 0x148 {
		t.Fatalf("authorized operations %#x, want 0x148", r.Groups[0].AuthorizedOperations)
	}

	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 4
	if r := c.roundTrip(list).(*kmsg.ListGroupsResponse); r.ErrorCode != 0 || len(r.Groups) != 1 || r.Groups[0].GroupState != "Stable" {
		t.Fatalf("list %+v", r)
	}
	h.fb.set(func(b *fakeBackend) { b.groups.listErr = kerr.CoordinatorLoadInProgress })
	if r := c.roundTrip(list).(*kmsg.ListGroupsResponse); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code || len(r.Groups) != 1 {
		t.Fatalf("list while loading %+v", r)
	}

	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version, dg.Groups = 2, []string{"idle", "busy"}
	rd := c.roundTrip(dg).(*kmsg.DeleteGroupsResponse)
	codes := []int16{rd.Groups[0].ErrorCode, rd.Groups[1].ErrorCode}
	if !slices.Equal(codes, []int16{0, kerr.NonEmptyGroup.Code}) {
		t.Fatalf("delete groups codes %v", codes)
	}
}
