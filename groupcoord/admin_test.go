package groupcoord

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// twoMembers makes a stable group of two consumers subscribed to t1.
func (h *harness) twoMembers(group string) (a, b string, gen int32) {
	h.t.Helper()
	a, gen = h.stableOne(group, nil)
	bCh := h.joinAsync(h.c, joinReq(9, group, "", nil, 10*time.Second))
	waitFor(h.t, "rebalance", func() bool { return h.heartbeat(4, group, a, nil, gen) == kerr.RebalanceInProgress.Code })
	ja := recv(h.t, h.joinAsync(h.c, joinReq(9, group, a, nil, 10*time.Second)))
	jb := recv(h.t, bCh)
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 {
		h.t.Fatalf("joins: %+v %+v", ja, jb)
	}
	a, b, gen = ja.MemberID, jb.MemberID, ja.Generation
	sbCh := h.syncAsync(syncReq(5, group, b, nil, gen, nil))
	wantCode(h.t, "sync A", h.sync(syncReq(5, group, a, nil, gen, map[string][]byte{a: []byte("pa"), b: []byte("pb")})).ErrorCode, nil)
	wantCode(h.t, "sync B", recv(h.t, sbCh).ErrorCode, nil)
	return a, b, gen
}

// TestFailover: a new Coordinator on the same View, as on a new leader,
// knows the offsets and the stable generation, whose members carry on
// without rejoining.
func TestFailover(t *testing.T) {
	h := newHarness(t, nil)
	a, b, gen := h.twoMembers("g")
	wantCode(t, "commit", h.commit(commitReq(8, "g", a, gen, "t1", map[int32]int64{0: 42}, "meta"))[0], nil)
	wantCode(t, "simple commit", h.commit(commitReq(8, "offsets-only", "", -1, "t1", map[int32]int64{3: 7}, ""))[0], nil)
	old := h.c
	old.Close()
	wantCode(t, "heartbeat after Close", h.heartbeat(4, "g", a, nil, gen), kerr.NotCoordinator)

	h.c = h.newCoordinator()
	if o, meta := h.fetch("g", "t1", 0); o != 42 || meta != "meta" {
		t.Fatalf("fetch: %d %q", o, meta)
	}
	if o, _ := h.fetch("offsets-only", "t1", 3); o != 7 {
		t.Fatalf("fetch offsets-only: %d", o)
	}
	d := h.describe("g")
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	wantCode(t, "heartbeat A", h.heartbeat(4, "g", a, nil, gen), nil)
	wantCode(t, "heartbeat B", h.heartbeat(0, "g", b, nil, gen), nil)
	wantCode(t, "stale generation", h.heartbeat(4, "g", b, nil, gen-1), kerr.IllegalGeneration)
	s := h.sync(syncReq(5, "g", b, nil, gen, nil))
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "pb" {
		t.Fatalf("sync B: %+v", s)
	}
	wantCode(t, "commit", h.commit(commitReq(8, "g", b, gen, "t1", map[int32]int64{1: 43}, ""))[0], nil)
	// A rejoin of the leader starts the next generation.
	aCh := h.joinAsync(h.c, joinReq(9, "g", a, nil, 10*time.Second))
	waitFor(t, "B learns", func() bool { return h.heartbeat(4, "g", b, nil, gen) == kerr.RebalanceInProgress.Code })
	jb := recv(t, h.joinAsync(h.c, joinReq(9, "g", b, nil, 10*time.Second)))
	ja := recv(t, aCh)
	if ja.Generation != gen+1 || jb.Generation != gen+1 || len(ja.Members) != 2 {
		t.Fatalf("next generation: %+v %+v", ja, jb)
	}
}

// TestOffsetDeleteAndDeleteGroup: OffsetDelete keeps the offsets of topics
// a group with members subscribes to; DeleteGroup deletes an empty group
// with its offsets.
func TestOffsetDeleteAndDeleteGroup(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	a, b, gen := h.twoMembers("g")
	wantCode(t, "commit t1", h.commit(commitReq(8, "g", a, gen, "t1", map[int32]int64{0: 1, 1: 2}, ""))[0], nil)
	wantCode(t, "commit t2", h.commit(commitReq(8, "g", a, gen, "t2", map[int32]int64{0: 3, 1: 4}, ""))[0], nil)

	req := offsetDeleteReq("g", "t1", 0)
	t2 := offsetDeleteReq("g", "t2", 0, 5)
	nope := offsetDeleteReq("g", "nope", 0)
	req.Topics = append(req.Topics, t2.Topics[0], nope.Topics[0])
	resp := h.c.OffsetDelete(ctx, req)
	var got []int16
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			got = append(got, rp.ErrorCode)
		}
	}
	want := []int16{kerr.GroupSubscribedToTopic.Code, 0, 0, kerr.UnknownTopicOrPartition.Code}
	if resp.ErrorCode != 0 || !slices.Equal(got, want) {
		t.Fatalf("offset delete: %d %v, want %v", resp.ErrorCode, got, want)
	}
	if o, _ := h.fetch("g", "t2", 0); o != -1 {
		t.Fatalf("t2/0 not deleted: %d", o)
	}
	if o, _ := h.fetch("g", "t2", 1); o != 4 {
		t.Fatalf("t2/1: %d", o)
	}
	if o, _ := h.fetch("g", "t1", 0); o != 1 {
		t.Fatalf("t1/0: %d", o)
	}

	wantCode(t, "delete", codeOf(h.c.DeleteGroup(ctx, "g")), kerr.NonEmptyGroup)
	wantCode(t, "leave", h.leave(5, "g", leaving(a, nil), leaving(b, nil)).ErrorCode, nil)
	waitFor(t, "empty", func() bool { return h.describe("g").State == "Empty" })

	// Empty: offsets of subscribed topics may go too.
	resp = h.c.OffsetDelete(ctx, offsetDeleteReq("g", "t1", 0))
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete of an empty group: %+v", resp)
	}
	if o, _ := h.fetch("g", "t1", 0); o != -1 {
		t.Fatalf("t1/0 not deleted: %d", o)
	}

	// A failed deletion leaves the group as the View has it.
	h.log.setFail(kerr.NotLeaderForPartition)
	wantCode(t, "delete, log failing", codeOf(h.c.DeleteGroup(ctx, "g")), kerr.NotCoordinator)
	h.log.setFail(nil)
	if d := h.describe("g"); d.State != "Empty" {
		t.Fatalf("after a failed deletion: %+v", d)
	}

	wantCode(t, "delete", codeOf(h.c.DeleteGroup(ctx, "g")), nil)
	if h.view.HasGroup("g") {
		t.Fatalf("the view keeps the group:\n%s", dump(h.view))
	}
	if d := h.describe("g"); d.State != "Dead" {
		t.Fatalf("describe a deleted group: %+v", d)
	}
	wantCode(t, "delete again", codeOf(h.c.DeleteGroup(ctx, "g")), kerr.GroupIDNotFound)
	wantCode(t, "offset delete", h.c.OffsetDelete(ctx, offsetDeleteReq("g", "t1", 1)).ErrorCode, kerr.GroupIDNotFound)
	if gs := h.c.ListGroups(nil, nil); len(gs) != 0 {
		t.Fatalf("list: %+v", gs)
	}
	// The group id is free again.
	a, _ = h.stableOne("g", nil)
	if d := h.describe("g"); d.State != "Stable" || d.Members[0].MemberID != a {
		t.Fatalf("recreated: %+v", d)
	}

	// A group with only offsets (simple commits), and the empty group id,
	// which commits allow.
	wantCode(t, "simple commit", h.commit(commitReq(2, "", "", -1, "t1", map[int32]int64{0: 9}, ""))[0], nil)
	if o, _ := h.fetch("", "t1", 0); o != 9 {
		t.Fatalf("empty group id: %d", o)
	}
	wantCode(t, "delete the empty group id", codeOf(h.c.DeleteGroup(ctx, "")), nil)
	if h.view.HasGroup("") {
		t.Fatal("not deleted")
	}
}

// TestUnknownGroupAnswers: fetches and describes of unknown groups are
// not errors (Kafka).
func TestUnknownGroupAnswers(t *testing.T) {
	h := newHarness(t, nil)
	if o, meta := h.fetch("nobody", "t1", 0); o != -1 || meta != "" {
		t.Fatalf("fetch: %d %q", o, meta)
	}
	if r := h.c.FetchOffsets("nobody", nil, false); r.ErrorCode != 0 || len(r.Topics) != 0 {
		t.Fatalf("fetch all: %+v", r)
	}
	if d := h.describe("nobody"); d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" || len(d.Members) != 0 {
		t.Fatalf("describe: %+v", d)
	}
	if h.c.ListGroups(nil, nil) != nil {
		t.Fatal("describes and fetches created groups")
	}
}

func TestListGroups(t *testing.T) {
	h := newHarness(t, nil)
	stable, gen := h.stableOne("stable", nil)
	_ = stable
	wantCode(t, "simple commit", h.commit(commitReq(8, "offsets", "", -1, "t1", map[int32]int64{0: 1}, ""))[0], nil)
	a, _ := h.stableOne("rebalancing", nil)
	waiting := h.joinAsync(h.c, joinReq(9, "rebalancing", "", nil, 10*time.Second))
	waitFor(t, "rebalance", func() bool { return h.heartbeat(4, "rebalancing", a, nil, gen) == kerr.RebalanceInProgress.Code })
	t.Cleanup(func() { h.c.Close(); <-waiting })

	names := func(gs []kmsg.ListGroupsResponseGroup) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.Group+"="+g.GroupState)
		}
		return out
	}
	for _, tc := range []struct {
		states, types []string
		want          []string
	}{
		{nil, nil, []string{"offsets=Empty", "rebalancing=PreparingRebalance", "stable=Stable"}},
		{[]string{"stable"}, nil, []string{"stable=Stable"}},
		{[]string{"Empty", "PreparingRebalance"}, nil, []string{"offsets=Empty", "rebalancing=PreparingRebalance"}},
		{[]string{"Dead"}, nil, nil},
		{nil, []string{"Classic"}, []string{"offsets=Empty", "rebalancing=PreparingRebalance", "stable=Stable"}},
		{nil, []string{"consumer"}, nil},
		{[]string{"Stable"}, []string{"classic", "share"}, []string{"stable=Stable"}},
	} {
		got := h.c.ListGroups(tc.states, tc.types)
		if !slices.Equal(names(got), tc.want) {
			t.Errorf("states %v types %v: got %v, want %v", tc.states, tc.types, names(got), tc.want)
		}
		for _, g := range got {
			if g.GroupType != "classic" || (g.Group != "offsets" && g.ProtocolType != "consumer") {
				t.Errorf("%+v", g)
			}
		}
	}
}
