package groupcoord

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// buildConsumerGroup makes group g with members a and b mid-rebalance (a
// revoking), a static member s, and a leaves-and-comes-back history.
func buildConsumerGroup(t *testing.T, h *harness) {
	t.Helper()
	h.cgHeartbeat(hb("g", "a", 0, []string{"t", "u"}, nil))
	req := hb("g", "s", 0, []string{"u"}, nil)
	req.InstanceID, req.RackID = kmsg.StringPtr("i"), kmsg.StringPtr("r1")
	req.SubscribedTopicRegex = kmsg.StringPtr("t.*")
	h.subscribesByRegex()
	h.cgHeartbeat(req)
	h.cgHeartbeat(hb("g", "x", 0, []string{"t"}, nil))
	h.cgHeartbeat(hb("g", "x", -1, nil, nil))
	h.cgHeartbeat(hb("g", "b", 0, []string{"t"}, nil))
	h.cgHeartbeat(hb("g", "a", 1, nil, Assignment{tID: {0, 1, 2, 3}, uID: {0, 1, 2}}))
}

// The consumer group records round-trip: a snapshot restores a View equal
// to the one the records built, replaying the same records into a fresh
// View builds the same bytes (determinism), and each record decodes to
// the state that wrote it.
func TestConsumerViewSnapshotRoundTrip(t *testing.T) {
	h, rl := newConsumerHarness(t, 0)
	buildConsumerGroup(t, h)
	g0, _ := h.view.ConsumerGroup("g")
	wantCode(t, "commit", h.commit(commitReq(9, "g", "b", g0.Members["b"].Epoch, "t", map[int32]int64{0: 5}, ""))[0], nil)

	restored := NewView()
	if err := restored.Restore(h.view.AppendSnapshot(nil)); err != nil {
		t.Fatal(err)
	}
	if !restored.Equal(h.view) {
		t.Fatal("restored view differs")
	}
	replayed := NewView()
	for _, r := range rl.recs {
		if err := replayed.Apply(r.Key, r.Value); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	if !replayed.Equal(h.view) {
		t.Fatal("replaying the records built another view")
	}
	g, ok := restored.ConsumerGroup("g")
	if !ok {
		t.Fatal("no group after restore")
	}
	s, a := g.Members["s"], g.Members["a"]
	switch {
	case s == nil || a == nil:
		t.Fatalf("members %v", g.Members)
	case deref(s.InstanceID) != "i" || deref(s.RackID) != "r1" || deref(s.Regex) != "t.*" || len(s.Topics) != 1 || s.ClientID != "client":
		t.Fatalf("static member metadata %+v", s)
	case a.State != memberUnrevokedPartitions || count(a.Revoking) == 0 || a.RebalanceTimeout != 60000:
		t.Fatalf("a is %+v, want revoking", a)
	case g.Epoch != 5 || g.TargetEpoch != 5 || g.MetadataHash == 0:
		t.Fatalf("group epoch %d target %d hash %d", g.Epoch, g.TargetEpoch, g.MetadataHash)
	}
	if o, ok := restored.Offset("g", "t", 0); !ok || o.Offset != 5 {
		t.Fatalf("offset %+v %v", o, ok)
	}
}

// Deleting an empty consumer group tombstones everything: the View
// forgets it, and so does its snapshot.
func TestConsumerGroupDeleteTombstones(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	h.cgHeartbeat(hb("g", "a", 0, []string{"t"}, nil))
	h.c.OffsetCommit(context.Background(), commitReq(9, "g", "a", 1, "t", map[int32]int64{0: 5}, ""))
	wantCode(t, "delete with a member", codeOf(h.c.DeleteGroup(context.Background(), "g")), kerr.NonEmptyGroup)
	h.cgHeartbeat(hb("g", "a", -1, nil, nil))
	if err := h.c.DeleteGroup(context.Background(), "g"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if h.view.HasGroup("g") || !h.view.Equal(NewView()) {
		t.Fatalf("the view still holds the group: %x", h.view.AppendSnapshot(nil))
	}
}

// A new coordinator on the same View (a failover) carries the group on:
// members heartbeat in their epochs without rejoining, and a partition
// still being revoked still waits for its owner.
func TestConsumerFailoverKeepsEpochs(t *testing.T) {
	h, rl := newConsumerHarness(t, 0)
	buildConsumerGroup(t, h)
	before, _ := h.view.ConsumerGroup("g")
	h.c.Close()
	c2, err := New(h.cfg, rl, h.view)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c2.Close)
	h.c = c2
	b := h.cgHeartbeat(hb("g", "b", before.Members["b"].Epoch, nil, Assignment{}))
	wantCode(t, "b after the failover", b.ErrorCode, nil)
	if b.MemberEpoch != before.Members["b"].Epoch {
		t.Fatalf("b's epoch went from %d to %d", before.Members["b"].Epoch, b.MemberEpoch)
	}
	a := h.cgHeartbeat(hb("g", "a", before.Members["a"].Epoch, nil, before.Members["a"].Assigned))
	wantCode(t, "a revokes after the failover", a.ErrorCode, nil)
	if a.MemberEpoch != before.TargetEpoch {
		t.Fatalf("a at epoch %d after revoking, want %d", a.MemberEpoch, before.TargetEpoch)
	}
	after, _ := h.view.ConsumerGroup("g")
	if after.Epoch != before.Epoch {
		t.Fatalf("group epoch went from %d to %d over the failover", before.Epoch, after.Epoch)
	}
}

// A member that stops heartbeating is removed when its session ends; one
// that does not revoke within its rebalance timeout is fenced.
func TestConsumerSessionAndRevocationTimeouts(t *testing.T) {
	h, _ := newConsumerHarness(t, 300*time.Millisecond)
	h.cgHeartbeat(hb("g", "a", 0, []string{"t"}, nil))
	waitFor(t, "a's session to end", func() bool {
		g, _ := h.view.ConsumerGroup("g")
		return g != nil && len(g.Members) == 0
	})

	h2, _ := newConsumerHarness(t, time.Minute)
	req := hb("g", "a", 0, []string{"t"}, nil)
	req.RebalanceTimeoutMillis = 100
	h2.cgHeartbeat(req)
	h2.cgHeartbeat(hb("g", "b", 0, []string{"t"}, nil))
	a := h2.cgHeartbeat(hb("g", "a", 1, nil, Assignment{tID: {0, 1, 2, 3}}))
	if a.MemberEpoch != 1 || count(assigned(a)) != 2 {
		t.Fatalf("a not revoking: %+v", a)
	}
	waitFor(t, "a to be fenced for not revoking", func() bool {
		g, _ := h2.view.ConsumerGroup("g")
		return g.Members["a"] == nil
	})
	wantCode(t, "a after its fencing", h2.cgHeartbeat(hb("g", "a", 1, nil, nil)).ErrorCode, kerr.UnknownMemberID)
	b := h2.cgHeartbeat(hb("g", "b", 2, nil, Assignment{}))
	if b.ErrorCode != 0 || count(assigned(b)) != 4 {
		t.Fatalf("b after a's fencing: %s %v, want all 4 partitions", errName(b.ErrorCode), assigned(b))
	}
}

// Offset commits and fetches of a consumer group check the member and its
// epoch as Kafka does; admin commits only while it is empty.
func TestConsumerGroupOffsets(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	h.cgHeartbeat(hb("g", "a", 0, []string{"t"}, nil))
	commit := func(v int16, member string, epoch int32) int16 {
		return h.commit(commitReq(v, "g", member, epoch, "t", map[int32]int64{0: 7}, ""))[0]
	}
	wantCode(t, "v9 in the member's epoch", commit(9, "a", 1), nil)
	wantCode(t, "v9 in a stale epoch", commit(9, "a", 0), kerr.StaleMemberEpoch)
	wantCode(t, "v9 unknown member", commit(9, "zz", 1), kerr.UnknownMemberID)
	wantCode(t, "v8 from a consumer member", commit(8, "a", 1), kerr.UnsupportedVersion)
	wantCode(t, "admin commit while not empty", commit(9, "", -1), kerr.UnknownMemberID)
	wantCode(t, "fetch in the epoch", codeOf(h.c.ValidateOffsetFetch("g", kmsg.StringPtr("a"), 1)), nil)
	wantCode(t, "fetch in a stale epoch", codeOf(h.c.ValidateOffsetFetch("g", kmsg.StringPtr("a"), 0)), kerr.StaleMemberEpoch)
	wantCode(t, "fetch unknown member", codeOf(h.c.ValidateOffsetFetch("g", kmsg.StringPtr("b"), 1)), kerr.UnknownMemberID)
	wantCode(t, "admin fetch", codeOf(h.c.ValidateOffsetFetch("g", nil, -1)), nil)
	h.cgHeartbeat(hb("g", "a", -1, nil, nil))
	wantCode(t, "admin commit once empty", commit(9, "", -1), nil)
}

// ListGroups tells consumer groups from classic ones; DescribeGroups
// refuses a consumer group as Kafka 4.x does; an empty consumer group
// becomes classic when a classic member joins, and back.
func TestConsumerGroupListDescribeAndMigration(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	h.cgHeartbeat(hb("c", "a", 0, []string{"t"}, nil))
	h.stableOne("k", nil)
	types := func(filter ...string) map[string]string {
		out := map[string]string{}
		for _, g := range h.c.ListGroups(nil, filter) {
			out[g.Group] = g.GroupType + "/" + g.GroupState
		}
		return out
	}
	if got := types(); got["c"] != "consumer/Stable" || got["k"] != "classic/Stable" || len(got) != 2 {
		t.Fatalf("ListGroups: %v", got)
	}
	if got := types("consumer"); len(got) != 1 || got["c"] == "" {
		t.Fatalf("ListGroups consumer: %v", got)
	}
	if d := h.describe("c"); d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" {
		t.Fatalf("DescribeGroups of a consumer group: %s %s, want GROUP_ID_NOT_FOUND and Dead (as Kafka 4.x)", errName(d.ErrorCode), d.State)
	}
	wantCode(t, "ConsumerGroupDescribe of a classic group", h.c.DescribeConsumerGroup("k").ErrorCode, kerr.GroupIDNotFound)
	h.cgHeartbeat(hb("c", "a", -1, nil, nil))
	h.join(joinReq(5, "c", "", nil, time.Minute)) // MEMBER_ID_REQUIRED, then a classic group
	if h.view.isConsumerGroup("c") {
		t.Fatal("the empty consumer group did not become classic")
	}
}

// KIP-1251: a member may commit in an older epoch the partitions it held
// since then (a commit sent before its epoch moved), not those it was
// given later nor those it gave up; the assignment epochs survive a
// snapshot.
func TestConsumerCommitAssignmentEpochs(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	h.cgHeartbeat(hb("g", "a", 0, []string{"t"}, nil))
	h.cgHeartbeat(hb("g", "b", 0, []string{"t"}, nil))
	kept := assigned(h.cgHeartbeat(hb("g", "a", 1, nil, Assignment{tID: {0, 1, 2, 3}})))[tID]
	if a := h.cgHeartbeat(hb("g", "a", 1, nil, Assignment{tID: kept})); a.MemberEpoch != 2 {
		t.Fatalf("a at epoch %d, want 2", a.MemberEpoch)
	}
	var gone int32
	for p := range int32(4) {
		if !slices.Contains(kept, p) {
			gone = p
		}
	}
	commit := func(member string, epoch, p int32) int16 {
		return h.commit(commitReq(9, "g", member, epoch, "t", map[int32]int64{p: 3}, ""))[0]
	}
	wantCode(t, "a, epoch 1, a partition it held since epoch 1", commit("a", 1, kept[0]), nil)
	wantCode(t, "a, epoch 1, a partition it gave up", commit("a", 1, gone), kerr.StaleMemberEpoch)
	wantCode(t, "a, epoch 3 (ahead of it)", commit("a", 3, kept[0]), kerr.StaleMemberEpoch)
	b := h.cgHeartbeat(hb("g", "b", 2, nil, Assignment{}))
	got := assigned(b)[tID]
	wantCode(t, "b, epoch 1 (before it had any)", commit("b", 1, got[0]), kerr.StaleMemberEpoch)
	wantCode(t, "b, its epoch", commit("b", 2, got[0]), nil)

	restored := NewView()
	if err := restored.Restore(h.view.AppendSnapshot(nil)); err != nil {
		t.Fatal(err)
	}
	g, _ := restored.ConsumerGroup("g")
	if e := g.Members["a"].assignedEpoch(tID, kept[0]); e != 1 {
		t.Fatalf("a's partition %d has assignment epoch %d after a restore, want 1", kept[0], e)
	}
	if e := g.Members["b"].assignedEpoch(tID, got[0]); e != 2 {
		t.Fatalf("b's partition %d has assignment epoch %d after a restore, want 2", got[0], e)
	}
}
