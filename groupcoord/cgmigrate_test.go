package groupcoord

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicJoinT is a classic consumer's JoinGroup (v5, eager: it owns
// nothing when it joins) subscribing to topic t.
func classicJoinT(group, member string) *kmsg.JoinGroupRequest {
	req := joinReq(5, group, member, nil, time.Minute)
	req.Protocols[0].Metadata = consumerMeta("t")
	return req
}

func assignmentT(ps ...int32) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: ps}}
	return a.AppendTo(nil)
}

func readAssignmentT(t *testing.T, b []byte) []int32 {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		t.Fatalf("assignment: %v", err)
	}
	var out []int32
	for _, at := range a.Topics {
		out = append(out, at.Partitions...)
	}
	return out
}

// Online migration, both ways: a KIP-848 member joining a classic group
// with a member upgrades it, the classic member keeping its partitions
// until it rejoins through JoinGroup and is handed its share by
// SyncGroup; when the KIP-848 member leaves, the group is classic again
// and rebalances.
func TestConsumerGroupOnlineMigration(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	j := h.join(classicJoinT("m", ""))
	wantCode(t, "classic join", j.ErrorCode, nil)
	c := j.MemberID
	s := h.sync(syncReq(5, "m", c, nil, j.Generation, map[string][]byte{c: assignmentT(0, 1, 2, 3)}))
	wantCode(t, "classic sync", s.ErrorCode, nil)

	n := h.cgHeartbeat(hb("m", "n", 0, []string{"t"}, nil))
	wantCode(t, "a KIP-848 member joins the classic group", n.ErrorCode, nil)
	if n.MemberEpoch != j.Generation+1 || count(assigned(n)) != 0 {
		t.Fatalf("n joined in epoch %d with %v, want epoch %d and nothing yet (c holds it all)", n.MemberEpoch, assigned(n), j.Generation+1)
	}
	if got := h.c.ListGroups(nil, nil); len(got) != 1 || got[0].GroupType != "consumer" {
		t.Fatalf("after the upgrade: %+v", got)
	}
	wantCode(t, "the classic member commits in its generation (v8)",
		h.commit(commitReq(8, "m", c, j.Generation, "t", map[int32]int64{0: 4}, ""))[0], nil)
	wantCode(t, "the classic member's heartbeat", h.heartbeat(4, "m", c, nil, j.Generation), kerr.RebalanceInProgress)

	j2 := h.join(classicJoinT("m", c))
	wantCode(t, "the classic member rejoins", j2.ErrorCode, nil)
	if j2.Generation != n.MemberEpoch || j2.LeaderID == c {
		t.Fatalf("rejoin: generation %d leader %q, want %d and no leader", j2.Generation, j2.LeaderID, n.MemberEpoch)
	}
	s2 := h.sync(syncReq(5, "m", c, nil, j2.Generation, nil))
	wantCode(t, "the classic member syncs", s2.ErrorCode, nil)
	kept := readAssignmentT(t, s2.MemberAssignment)
	if len(kept) != 2 {
		t.Fatalf("the classic member kept %v, want 2 partitions", kept)
	}
	wantCode(t, "heartbeat once reconciled", h.heartbeat(4, "m", c, nil, j2.Generation), nil)
	n = h.cgHeartbeat(hb("m", "n", n.MemberEpoch, nil, Assignment{}))
	if got := assigned(n)[tID]; len(got) != 2 {
		t.Fatalf("n got %v once c let go, want the other 2", got)
	}

	leave := h.cgHeartbeat(hb("m", "n", n.MemberEpoch, nil, nil))
	leave = h.cgHeartbeat(hb("m", "n", -1, nil, nil))
	wantCode(t, "the KIP-848 member leaves", leave.ErrorCode, nil)
	if h.view.isConsumerGroup("m") {
		t.Fatal("still a consumer group with only a classic member left")
	}
	md, ok := h.view.Group("m")
	if !ok || len(md.Members) != 1 || md.Members[0].ID != c {
		t.Fatalf("the downgraded group's record: %+v %v", md, ok)
	}
	// The classic generation is the group epoch, which the leave bumped:
	// the member's generation is behind it, as in Kafka.
	wantCode(t, "the classic member's heartbeat after the downgrade", h.heartbeat(4, "m", c, nil, j2.Generation), kerr.IllegalGeneration)
	j3 := h.join(classicJoinT("m", c))
	if j3.ErrorCode != 0 || j3.LeaderID != c || j3.Generation <= j2.Generation {
		t.Fatalf("classic rejoin after the downgrade: %s leader %q generation %d", errName(j3.ErrorCode), j3.LeaderID, j3.Generation)
	}
}

// With group.consumer.migration.policy disabled (or downgrade only), a
// KIP-848 member cannot join a classic group with members, and a
// consumer group whose last KIP-848 member leaves stays one.
func TestConsumerGroupMigrationPolicy(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	h.c.Close()
	h.cfg.Consumer.MigrationPolicy = MigrationDisabled
	c2, err := New(h.cfg, h.log, h.view)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c2.Close)
	h.c = c2
	j := h.join(classicJoinT("m", ""))
	h.sync(syncReq(5, "m", j.MemberID, nil, j.Generation, map[string][]byte{j.MemberID: assignmentT(0, 1, 2, 3)}))
	wantCode(t, "a KIP-848 member joining a classic group, upgrades disabled",
		h.cgHeartbeat(hb("m", "n", 0, []string{"t"}, nil)).ErrorCode, kerr.GroupIDNotFound)
	if md, ok := h.view.Group("m"); !ok || len(md.Members) != 1 {
		t.Fatalf("the classic group changed: %+v", md)
	}
}

// A classic member of a consumer group asked to rejoin that keeps
// heartbeating without rejoining is fenced after its rebalance timeout,
// as Kafka's join timeout does, so its partitions go to the others.
func TestConsumerClassicMemberRejoinTimeout(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	req := classicJoinT("m", "")
	req.RebalanceTimeoutMillis = 300
	j := h.join(req)
	h.sync(syncReq(5, "m", j.MemberID, nil, j.Generation, map[string][]byte{j.MemberID: assignmentT(0, 1, 2, 3)}))
	n := h.cgHeartbeat(hb("m", "n", 0, []string{"t"}, nil))
	wantCode(t, "n joins", n.ErrorCode, nil)
	waitFor(t, "the classic member to be fenced for not rejoining", func() bool {
		h.heartbeat(4, "m", j.MemberID, nil, j.Generation) // REBALANCE_IN_PROGRESS, and never a rejoin
		g, _ := h.view.ConsumerGroup("m")
		return g.Members[j.MemberID] == nil
	})
	n = h.cgHeartbeat(hb("m", "n", n.MemberEpoch, nil, Assignment{}))
	if count(assigned(n)) != 4 {
		t.Fatalf("n got %v after the classic member was fenced, want all 4", assigned(n))
	}
}
