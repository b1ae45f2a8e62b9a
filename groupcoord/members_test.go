package groupcoord

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStaticMembership: a static member that restarts (joins again with
// its instance id and no member id) takes its old place without a
// rebalance; the old id is fenced.
func TestStaticMembership(t *testing.T) {
	h := newHarness(t, nil)
	const g = "static"
	inst := "instance-a"
	// Static members get their id at once, without MEMBER_ID_REQUIRED.
	first := h.c.JoinGroup(context.Background(), "client", "/h", joinReq(5, g, "", &inst, 10*time.Second))
	if first.ErrorCode != 0 || first.Generation != 1 || first.LeaderID != first.MemberID {
		t.Fatalf("first join: %+v", first)
	}
	id1 := first.MemberID
	wantCode(t, "sync", h.sync(syncReq(5, g, id1, &inst, 1, map[string][]byte{id1: []byte("a")})).ErrorCode, nil)

	// The restarted instance, before JoinGroup v9: the old leader id is
	// returned, so it does not assign.
	second := h.join(joinReq(5, g, "", &inst, 10*time.Second))
	id2 := second.MemberID
	if second.ErrorCode != 0 || id2 == id1 || second.Generation != 1 || second.LeaderID != id1 || len(second.Members) != 0 {
		t.Fatalf("rejoin: %+v", second)
	}
	wantCode(t, "old id", h.heartbeat(4, g, id1, &inst, 1), kerr.FencedInstanceID)
	wantCode(t, "old id without instance", h.heartbeat(4, g, id1, nil, 1), kerr.UnknownMemberID)
	wantCode(t, "old id commit", h.commit(withInstance(commitReq(8, g, id1, 1, "t1", map[int32]int64{0: 1}, ""), &inst))[0],
		kerr.FencedInstanceID)
	wantCode(t, "old id sync", h.sync(syncReq(5, g, id1, &inst, 1, nil)).ErrorCode, kerr.FencedInstanceID)
	wantCode(t, "new id", h.heartbeat(4, g, id2, &inst, 1), nil)
	s := h.sync(syncReq(5, g, id2, &inst, 1, nil))
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "a" {
		t.Fatalf("sync of the new id: %+v", s)
	}
	if d := h.describe(g); d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != id2 || deref(d.Members[0].InstanceID) != inst {
		t.Fatalf("describe: %+v", d)
	}
	if md, _ := h.view.Group(g); md.Generation != 1 || len(md.Members) != 1 || md.Members[0].ID != id2 || md.Leader != id2 {
		t.Fatalf("stored: %+v", md)
	}
	wantCode(t, "commit", h.commit(withInstance(commitReq(8, g, id2, 1, "t1", map[int32]int64{0: 1}, ""), &inst))[0], nil)

	// JoinGroup v9: the leader is told it leads, and to skip assigning.
	third := h.join(joinReq(9, g, "", &inst, 10*time.Second))
	id3 := third.MemberID
	if third.ErrorCode != 0 || third.LeaderID != id3 || !third.SkipAssignment || len(third.Members) != 1 || third.Generation != 1 {
		t.Fatalf("v9 rejoin: %+v", third)
	}
	wantCode(t, "id2 fenced", h.heartbeat(4, g, id2, &inst, 1), kerr.FencedInstanceID)

	// An administrator removes the static member by its instance id.
	l := h.leave(5, g, leaving("", &inst))
	if l.ErrorCode != 0 || len(l.Members) != 1 || l.Members[0].ErrorCode != 0 {
		t.Fatalf("leave by instance id: %+v", l)
	}
	waitFor(t, "empty group", func() bool { return h.describe(g).State == "Empty" })
	l = h.leave(5, g, leaving("", &inst))
	wantCode(t, "leave again", l.Members[0].ErrorCode, kerr.UnknownMemberID)
}

// TestStaticMemberRejoinFailsToStore: if the new id cannot be stored,
// the restarted instance gets the error and the old id stays the member.
func TestStaticMemberRejoinFailsToStore(t *testing.T) {
	h := newHarness(t, nil)
	inst := "i"
	id1, gen := h.stableOne("g", &inst)
	before := h.view.AppendSnapshot(nil)
	h.log.setFail(kerr.NotLeaderForPartition)
	r := h.join(joinReq(5, "g", "", &inst, 10*time.Second))
	wantCode(t, "rejoin", r.ErrorCode, kerr.NotCoordinator)
	h.log.setFail(nil)
	wantCode(t, "old id", h.heartbeat(4, "g", id1, &inst, gen), nil)
	if d := h.describe("g"); d.State != "Stable" || d.Members[0].MemberID != id1 {
		t.Fatalf("describe: %+v", d)
	}
	if string(before) != string(h.view.AppendSnapshot(nil)) {
		t.Fatal("the view changed")
	}
}

func withInstance(req *kmsg.OffsetCommitRequest, inst *string) *kmsg.OffsetCommitRequest {
	req.InstanceID = inst
	return req
}

// TestSessionExpiry: a member that stops heartbeating is removed and the
// others rebalance without it. It runs in a synctest bubble, as do the
// other tests of timers here: the clock moves only when every goroutine
// waits, so the order of joins and deadlines does not depend on the
// machine's speed.
func TestSessionExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		const g = "expiry"
		a, gen := h.stableOne(g, nil)
		bCh := h.joinAsync(h.c, joinReq(9, g, "", nil, 50*time.Millisecond))
		waitFor(t, "rebalance", func() bool { return h.heartbeat(4, g, a, nil, gen) == kerr.RebalanceInProgress.Code })
		ja := recv(t, h.joinAsync(h.c, joinReq(9, g, a, nil, 10*time.Second)))
		jb := recv(t, bCh)
		if ja.ErrorCode != 0 || jb.ErrorCode != 0 || len(ja.Members) != 2 {
			t.Fatalf("generation with B: %+v %+v", ja, jb)
		}
		gen = ja.Generation
		// B never syncs nor heartbeats. A's sync may already see B expired.
		s := h.sync(syncReq(5, g, a, nil, gen, map[string][]byte{a: []byte("x"), jb.MemberID: []byte("y")}))
		if s.ErrorCode != 0 && s.ErrorCode != kerr.RebalanceInProgress.Code {
			t.Fatalf("sync A: %s", errName(s.ErrorCode))
		}
		waitFor(t, "B's expiry", func() bool { return h.heartbeat(4, g, a, nil, gen) == kerr.RebalanceInProgress.Code })
		wantCode(t, "B", h.heartbeat(4, g, jb.MemberID, nil, gen), kerr.UnknownMemberID)
		ja = recv(t, h.joinAsync(h.c, joinReq(9, g, a, nil, 10*time.Second)))
		if ja.ErrorCode != 0 || ja.Generation != gen+1 || len(ja.Members) != 1 || ja.Members[0].MemberID != a {
			t.Fatalf("generation without B: %+v", ja)
		}
	})
}

// TestInitialRebalanceDelay: the first rebalance of an empty group waits
// for more members, so that the first generation has both.
func TestInitialRebalanceDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = 300 * time.Millisecond })
		aCh := h.joinAsync(h.c, joinReq(3, "g", "", nil, 10*time.Second))
		waitFor(t, "A waiting", func() bool { return len(h.describe("g").Members) == 1 })
		if d := h.describe("g"); d.State != "PreparingRebalance" {
			t.Fatalf("during the delay: %+v", d)
		}
		bCh := h.joinAsync(h.c, joinReq(3, "g", "", nil, 10*time.Second))
		ja, jb := recv(t, aCh), recv(t, bCh)
		if ja.ErrorCode != 0 || jb.ErrorCode != 0 || ja.Generation != 1 || jb.Generation != 1 {
			t.Fatalf("joins: %+v %+v", ja, jb)
		}
		leader := ja
		if jb.LeaderID == jb.MemberID {
			leader = jb
		}
		if len(leader.Members) != 2 {
			t.Fatalf("the first generation has %d members", len(leader.Members))
		}
	})
}

// TestGroupMaxSize: a member over MaxGroupSize is refused, and Close
// answers the JoinGroups that wait NOT_COORDINATOR.
func TestGroupMaxSizeAndCloseUnblocksJoins(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxGroupSize = 2; c.InitialRebalanceDelay = time.Minute })
	aCh := h.joinAsync(h.c, joinReq(9, "g", "", nil, 10*time.Second))
	bCh := h.joinAsync(h.c, joinReq(3, "g", "", nil, 10*time.Second))
	waitFor(t, "two waiting", func() bool { return len(h.describe("g").Members) == 2 })
	c := h.join(joinReq(3, "g", "", nil, 10*time.Second))
	wantCode(t, "third member", c.ErrorCode, kerr.GroupMaxSizeReached)
	c = h.c.JoinGroup(context.Background(), "c", "/h", joinReq(9, "g", "", nil, 10*time.Second))
	wantCode(t, "third member v9", c.ErrorCode, kerr.GroupMaxSizeReached)
	if n := len(h.describe("g").Members); n != 2 {
		t.Fatalf("%d members", n)
	}
	h.c.Close()
	wantCode(t, "A", recv(t, aCh).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "B", recv(t, bCh).ErrorCode, kerr.NotCoordinator)
}

// TestAssignmentTooLargeToStore: a generation whose group record is over
// MaxRecordBytes fails its SyncGroups with UNKNOWN_SERVER_ERROR and
// rebalances (Kafka's MESSAGE_TOO_LARGE, converted); nothing is stored.
func TestAssignmentTooLargeToStore(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRecordBytes = 1024 })
	j := h.join(joinReq(9, "g", "", nil, 10*time.Second))
	before := h.view.AppendSnapshot(nil)
	s := h.sync(syncReq(5, "g", j.MemberID, nil, j.Generation, map[string][]byte{j.MemberID: make([]byte, 2000)}))
	wantCode(t, "sync", s.ErrorCode, kerr.UnknownServerError)
	if d := h.describe("g"); d.State != "PreparingRebalance" {
		t.Fatalf("describe: %+v", d)
	}
	if string(before) != string(h.view.AppendSnapshot(nil)) {
		t.Fatal("the view changed")
	}
	// The member rejoins and assigns something smaller.
	j = h.join(joinReq(9, "g", j.MemberID, nil, 10*time.Second))
	if j.ErrorCode != 0 || j.Generation != 2 {
		t.Fatalf("rejoin: %+v", j)
	}
	wantCode(t, "sync", h.sync(syncReq(5, "g", j.MemberID, nil, 2, map[string][]byte{j.MemberID: []byte("ok")})).ErrorCode, nil)
}

// TestLeavePendingMember: a member id handed out with MEMBER_ID_REQUIRED
// may leave before joining with it.
func TestLeavePendingMember(t *testing.T) {
	h := newHarness(t, nil)
	a, _ := h.stableOne("g", nil)
	p := h.c.JoinGroup(context.Background(), "c", "/h", joinReq(9, "g", "", nil, 10*time.Second))
	wantCode(t, "join", p.ErrorCode, kerr.MemberIDRequired)
	l := h.leave(4, "g", leaving(p.MemberID, nil), leaving("nobody", nil), leaving(a, nil))
	if l.ErrorCode != 0 || len(l.Members) != 3 || l.Members[0].ErrorCode != 0 ||
		l.Members[1].ErrorCode != kerr.UnknownMemberID.Code || l.Members[2].ErrorCode != 0 {
		t.Fatalf("leave: %+v", l)
	}
	wantCode(t, "join with the id", h.join(joinReq(9, "g", p.MemberID, nil, 10*time.Second)).ErrorCode, kerr.UnknownMemberID)
	waitFor(t, "empty", func() bool { return h.describe("g").State == "Empty" })
}

func TestNewRejectsBadConfig(t *testing.T) {
	view := NewView()
	log := &testLog{view: view}
	for _, tc := range []struct {
		field string
		cfg   Config
	}{
		{"TopicExists", Config{}},
		{"MaxSessionTimeout", Config{TopicExists: testTopicExists, MinSessionTimeout: time.Minute, MaxSessionTimeout: time.Second}},
		{"MaxRecordBytes", Config{TopicExists: testTopicExists, MaxRecordBytes: 10}},
	} {
		_, err := New(tc.cfg, log, view)
		ce, ok := errors.AsType[*ConfigError](err)
		if !ok || ce.Field != tc.field || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	if _, err := New(Config{TopicExists: testTopicExists}, nil, view); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil log: %v", err)
	}
}

// TestSyncDeadline: a member that heartbeats but never sends its
// SyncGroup is removed once the rebalance timeout passes.
func TestSyncDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = 300 * time.Millisecond })
		req := func(member string) *kmsg.JoinGroupRequest {
			r := joinReq(3, "g", member, nil, 10*time.Second)
			r.RebalanceTimeoutMillis = 300
			return r
		}
		aCh := h.joinAsync(h.c, req(""))
		waitFor(t, "A waiting", func() bool { return len(h.describe("g").Members) == 1 })
		bCh := h.joinAsync(h.c, req(""))
		ja, jb := recv(t, aCh), recv(t, bCh)
		if ja.ErrorCode != 0 || jb.ErrorCode != 0 || ja.Generation != 1 || jb.Generation != 1 {
			t.Fatalf("joins: %+v %+v", ja, jb)
		}
		leader, follower := ja, jb
		if jb.LeaderID == jb.MemberID {
			leader, follower = jb, ja
		}
		h.sync(syncReq(3, "g", leader.MemberID, nil, 1, nil))
		waitFor(t, "the follower's removal", func() bool {
			return h.heartbeat(3, "g", follower.MemberID, nil, 1) == kerr.UnknownMemberID.Code
		})
	})
}
