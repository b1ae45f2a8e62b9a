package groupcoord

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestGroupCycle takes two members through join, sync, heartbeat, commit,
// fetch and leave, at the oldest and newest versions.
func TestGroupCycle(t *testing.T) {
	for _, v := range []struct {
		name                          string
		join, sync, hb, leave, commit int16
	}{
		{"v0", 0, 0, 0, 0, 1}, // OffsetCommit v0 has no generation: see TestSimpleCommit
		{"latest", 9, 5, 4, 5, 8},
	} {
		t.Run(v.name, func(t *testing.T) {
			h := newHarness(t, nil)
			const g = "cycle"
			session := 10 * time.Second

			// A alone: generation 1, A leads.
			ja := h.join(joinReq(v.join, g, "", nil, session))
			wantCode(t, "join A", ja.ErrorCode, nil)
			a := ja.MemberID
			if ja.Generation != 1 || ja.LeaderID != a || len(ja.Members) != 1 {
				t.Fatalf("join A: %+v", ja)
			}
			sa := h.sync(syncReq(v.sync, g, a, nil, 1, map[string][]byte{a: []byte("all")}))
			wantCode(t, "sync A", sa.ErrorCode, nil)
			if string(sa.MemberAssignment) != "all" {
				t.Fatalf("sync A: assignment %q", sa.MemberAssignment)
			}
			if d := h.describe(g); d.State != "Stable" || len(d.Members) != 1 {
				t.Fatalf("describe: %+v", d)
			}

			// B joins: A learns of the rebalance from its heartbeat.
			bCh := h.joinAsync(h.c, joinReq(v.join, g, "", nil, session))
			waitFor(t, "rebalance", func() bool { return h.describe(g).State == "PreparingRebalance" })
			wantCode(t, "heartbeat A", h.heartbeat(v.hb, g, a, nil, 1), kerr.RebalanceInProgress)
			ja = recv(t, h.joinAsync(h.c, joinReq(v.join, g, a, nil, session)))
			jb := recv(t, bCh)
			wantCode(t, "rejoin A", ja.ErrorCode, nil)
			wantCode(t, "join B", jb.ErrorCode, nil)
			b := jb.MemberID
			if ja.Generation != 2 || jb.Generation != 2 || ja.LeaderID != a || jb.LeaderID != a ||
				len(ja.Members) != 2 || len(jb.Members) != 0 {
				t.Fatalf("generation 2: A %+v, B %+v", ja, jb)
			}
			if v.join >= 7 && (deref(ja.Protocol) != "range" || deref(ja.ProtocolType) != "consumer") {
				t.Fatalf("join A: protocol %v/%v", ja.ProtocolType, ja.Protocol)
			}

			// B syncs first and waits for the leader's assignment.
			sbCh := h.syncAsync(syncReq(v.sync, g, b, nil, 2, nil))
			wantCode(t, "heartbeat B while completing", h.heartbeat(v.hb, g, b, nil, 2), nil)
			sa = h.sync(syncReq(v.sync, g, a, nil, 2, map[string][]byte{a: []byte("pa"), b: []byte("pb")}))
			sb := recv(t, sbCh)
			wantCode(t, "sync A", sa.ErrorCode, nil)
			wantCode(t, "sync B", sb.ErrorCode, nil)
			if string(sa.MemberAssignment) != "pa" || string(sb.MemberAssignment) != "pb" {
				t.Fatalf("assignments %q %q", sa.MemberAssignment, sb.MemberAssignment)
			}
			if v.sync >= 5 && (deref(sb.Protocol) != "range" || deref(sb.ProtocolType) != "consumer") {
				t.Fatalf("sync B: protocol %v/%v", sb.ProtocolType, sb.Protocol)
			}
			wantCode(t, "heartbeat A", h.heartbeat(v.hb, g, a, nil, 2), nil)
			wantCode(t, "heartbeat B", h.heartbeat(v.hb, g, b, nil, 2), nil)
			md, ok := h.view.Group(g)
			if !ok || md.Generation != 2 || md.Leader != a || len(md.Members) != 2 {
				t.Fatalf("stored metadata: %+v", md)
			}

			// Commits of both members, then fetches.
			for _, code := range h.commit(commitReq(v.commit, g, a, 2, "t1", map[int32]int64{0: 10, 1: 11}, "ma")) {
				wantCode(t, "commit A", code, nil)
			}
			for _, code := range h.commit(commitReq(v.commit, g, b, 2, "t1", map[int32]int64{2: 12}, "mb")) {
				wantCode(t, "commit B", code, nil)
			}
			if o, meta := h.fetch(g, "t1", 1); o != 11 || meta != "ma" {
				t.Fatalf("fetch t1/1: %d %q", o, meta)
			}
			if o, _ := h.fetch(g, "t1", 5); o != -1 {
				t.Fatalf("fetch t1/5: %d, want -1", o)
			}
			all := h.c.FetchOffsets(g, nil, true)
			if len(all.Topics) != 1 || len(all.Topics[0].Partitions) != 3 || all.Topics[0].Partitions[2].Offset != 12 {
				t.Fatalf("fetch all: %+v", all)
			}
			wantEpoch := int32(-1)
			if v.commit >= 6 {
				wantEpoch = 3
			}
			if o, _ := h.view.Offset(g, "t1", 0); o.LeaderEpoch != wantEpoch || o.CommitTimestamp <= 0 {
				t.Fatalf("stored offset: %+v", o)
			}

			// B leaves; A rejoins alone; A leaves: the group is empty.
			l := h.leave(v.leave, g, leaving(b, nil))
			wantCode(t, "leave B", l.ErrorCode, nil)
			if v.leave >= 3 && (len(l.Members) != 1 || l.Members[0].ErrorCode != 0) {
				t.Fatalf("leave B: %+v", l)
			}
			wantCode(t, "heartbeat B after leaving", h.heartbeat(v.hb, g, b, nil, 2), kerr.UnknownMemberID)
			wantCode(t, "heartbeat A", h.heartbeat(v.hb, g, a, nil, 2), kerr.RebalanceInProgress)
			ja = recv(t, h.joinAsync(h.c, joinReq(v.join, g, a, nil, session)))
			if ja.ErrorCode != 0 || ja.Generation != 3 || len(ja.Members) != 1 {
				t.Fatalf("rejoin A: %+v", ja)
			}
			wantCode(t, "sync A", h.sync(syncReq(v.sync, g, a, nil, 3, map[string][]byte{a: []byte("all")})).ErrorCode, nil)
			wantCode(t, "leave A", h.leave(v.leave, g, leaving(a, nil)).ErrorCode, nil)
			waitFor(t, "empty group stored", func() bool {
				md, ok := h.view.Group(g)
				return ok && md.Generation == 4 && len(md.Members) == 0
			})
			if d := h.describe(g); d.State != "Empty" || len(d.Members) != 0 {
				t.Fatalf("describe: %+v", d)
			}
			if o, _ := h.fetch(g, "t1", 2); o != 12 {
				t.Fatalf("offsets outlive the members: %d", o)
			}
		})
	}
}

// TestMemberIDRequired: from JoinGroup v4 a new dynamic member first gets
// its id with MEMBER_ID_REQUIRED, then joins with it.
func TestMemberIDRequired(t *testing.T) {
	h := newHarness(t, nil)
	resp := h.c.JoinGroup(context.Background(), "client", "/h", joinReq(4, "g", "", nil, time.Second))
	wantCode(t, "first join", resp.ErrorCode, kerr.MemberIDRequired)
	if resp.MemberID == "" || resp.Generation != -1 {
		t.Fatalf("first join: %+v", resp)
	}
	if d := h.describe("g"); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("a pending member is no member: %+v", d)
	}
	j := recv(t, h.joinAsync(h.c, joinReq(4, "g", resp.MemberID, nil, time.Second)))
	if j.ErrorCode != 0 || j.MemberID != resp.MemberID || j.Generation != 1 || j.LeaderID != resp.MemberID {
		t.Fatalf("second join: %+v", j)
	}
	// An id nobody handed out is unknown.
	wantCode(t, "made-up id", h.join(joinReq(4, "g", "client-made-up", nil, time.Second)).ErrorCode, kerr.UnknownMemberID)
	// A pending id that never comes back expires with its session.
	p := h.c.JoinGroup(context.Background(), "client", "/h", joinReq(4, "g2", "", nil, 20*time.Millisecond))
	wantCode(t, "pending", p.ErrorCode, kerr.MemberIDRequired)
	waitFor(t, "pending id expiry", func() bool {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		return h.c.groups["g2"] == nil
	})
	wantCode(t, "expired id", h.join(joinReq(4, "g2", p.MemberID, nil, time.Second)).ErrorCode, kerr.UnknownMemberID)
}
