package groupcoord

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newShareHarness is a harness whose coordinator serves share groups on
// testTopics ("t" has 4 partitions, "u" 3), with a session of session
// (0: a minute) and at most maxSize members (0: the default).
func newShareHarness(t testing.TB, session time.Duration, maxSize int) (*harness, *recLog) {
	t.Helper()
	if session == 0 {
		session = time.Minute
	}
	h := &harness{t: t}
	h.cfg = Config{
		TopicExists: testTopicExists, MinSessionTimeout: 10 * time.Millisecond, MaxSessionTimeout: time.Minute,
		InitialRebalanceDelay: -1, Logger: slog.New(slog.DiscardHandler),
		Share: ShareConfig{SessionTimeout: session, HeartbeatInterval: max(session/10, time.Millisecond), MaxSize: maxSize},
	}
	h.countTopicListing()
	h.view = NewView()
	rl := &recLog{testLog: &testLog{view: h.view}}
	h.log = rl.testLog
	c, err := New(h.cfg, rl, h.view)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	h.c = c
	return h, rl
}

// shb is a ShareGroupHeartbeat v1: topics nil leaves the subscription as
// it is.
func shb(g, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = g, member, epoch
	req.SubscribedTopicNames = topics
	return req
}

func (h *harness) shareHB(req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	h.t.Helper()
	return h.c.ShareGroupHeartbeat(context.Background(), "client", "/127.0.0.1", req)
}

// shareAssigned is a heartbeat answer's assignment; nil if it had none.
func shareAssigned(resp *kmsg.ShareGroupHeartbeatResponse) Assignment {
	if resp.Assignment == nil {
		return nil
	}
	a := Assignment{}
	for _, t := range resp.Assignment.TopicPartitions {
		a[t.TopicID] = t.Partitions
	}
	return a
}

// Two members of topic u (3 partitions) share its partitions 2 and 1;
// every partition goes to exactly one of them, and the member that was
// there first keeps what it can.
func TestShareJoinAssignsThreePartitionsToTwoMembers(t *testing.T) {
	h, _ := newShareHarness(t, 0, 0)
	a := h.shareHB(shb("g", "a", 0, "u"))
	wantCode(t, "a joins", a.ErrorCode, nil)
	if a.MemberEpoch != 1 || count(shareAssigned(a)) != 3 || a.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("a: epoch %d assignment %v interval %d, want epoch 1 with all 3", a.MemberEpoch, shareAssigned(a), a.HeartbeatIntervalMillis)
	}
	b := h.shareHB(shb("g", "b", 0, "u"))
	if b.ErrorCode != 0 || b.MemberEpoch != 2 || count(shareAssigned(b)) != 1 {
		t.Fatalf("b: %s epoch %d %v, want epoch 2 with 1 partition", errName(b.ErrorCode), b.MemberEpoch, shareAssigned(b))
	}
	a = h.shareHB(shb("g", "a", 1))
	if a.MemberEpoch != 2 || count(shareAssigned(a)) != 2 {
		t.Fatalf("a after b joined: epoch %d %v, want epoch 2 with 2 partitions", a.MemberEpoch, shareAssigned(a))
	}
	seen := map[int32]int{}
	for _, p := range append(shareAssigned(a)[uID], shareAssigned(b)[uID]...) {
		seen[p]++
	}
	if len(seen) != 3 || seen[0] != 1 || seen[1] != 1 || seen[2] != 1 {
		t.Fatalf("partitions of u held %v, want each once", seen)
	}
	if again := h.shareHB(shb("g", "a", 2)); again.Assignment != nil || again.MemberEpoch != 2 {
		t.Fatalf("an unchanged heartbeat got %+v, want no assignment", again)
	}
	if full := h.shareHB(shb("g", "a", 2, "u")); count(shareAssigned(full)) != 2 || full.MemberEpoch != 2 {
		t.Fatalf("a full heartbeat got %+v, want its 2 partitions again", full)
	}
	d := h.c.DescribeShareGroup("g")
	if d.ErrorCode != 0 || d.GroupState != "Stable" || d.GroupEpoch != 2 || d.AssignmentEpoch != 2 || d.Assignor != "simple" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	if m := d.Members[0]; m.MemberID != "a" || m.ClientHost != "/127.0.0.1" || m.Assignment.TopicPartitions[0].Topic != "u" || len(m.SubscribedTopicNames) != 1 {
		t.Fatalf("described a: %+v", m)
	}
}

// More members than partitions: each partition is shared.
func TestShareAssignSharesPartitions(t *testing.T) {
	in := []assignMember{{id: "a", topics: []string{"u"}}, {id: "b", topics: []string{"u"}},
		{id: "c", topics: []string{"u"}}, {id: "d", topics: []string{"u"}}}
	out := shareAssign(in, map[string]TopicInfo{"u": {Name: "u", ID: uID, Partitions: 3}})
	held := map[int32]int{}
	for _, m := range in {
		if n := len(out[m.id][uID]); n != 1 && n != 2 {
			t.Fatalf("%s holds %v", m.id, out[m.id])
		}
		for _, p := range out[m.id][uID] {
			held[p]++
		}
	}
	if held[0] != 2 || held[1] != 2 || held[2] != 2 {
		t.Fatalf("holders per partition %v, want 2 each", held)
	}
}

// Epochs: a newer epoch or an older one other than the previous is
// fenced; the previous epoch is accepted (its answer may have been lost);
// a leave removes the member and bumps the group epoch.
func TestShareEpochsAndLeave(t *testing.T) {
	h, _ := newShareHarness(t, 0, 0)
	h.shareHB(shb("g", "a", 0, "t"))
	h.shareHB(shb("g", "b", 0, "t"))
	a := h.shareHB(shb("g", "a", 1))
	if a.MemberEpoch != 2 {
		t.Fatalf("a at %d, want 2", a.MemberEpoch)
	}
	wantCode(t, "newer epoch", h.shareHB(shb("g", "a", 3)).ErrorCode, kerr.FencedMemberEpoch)
	wantCode(t, "previous epoch", h.shareHB(shb("g", "a", 1)).ErrorCode, nil)
	wantCode(t, "older epoch", h.shareHB(shb("g", "b", 1)).ErrorCode, kerr.FencedMemberEpoch) // b's previous is 0, current 2
	wantCode(t, "unknown member", h.shareHB(shb("g", "z", 1)).ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "unknown group", h.shareHB(shb("nope", "z", 1)).ErrorCode, kerr.GroupIDNotFound)
	leave := h.shareHB(shb("g", "b", -1))
	if leave.ErrorCode != 0 || leave.MemberEpoch != -1 || deref(leave.MemberID) != "b" {
		t.Fatalf("leave: %+v", leave)
	}
	g, _ := h.view.ShareGroup("g")
	if len(g.Members) != 1 || g.Epoch != 3 || g.TargetEpoch != 3 {
		t.Fatalf("after b left: epoch %d target %d members %d", g.Epoch, g.TargetEpoch, len(g.Members))
	}
	a = h.shareHB(shb("g", "a", 2))
	if a.MemberEpoch != 3 || count(shareAssigned(a)) != 4 {
		t.Fatalf("a after b left: epoch %d %v, want 3 with all 4", a.MemberEpoch, shareAssigned(a))
	}
	if e, ok := h.view.ShareMember("g", "a"); !ok || e != 3 {
		t.Fatalf("ShareMember(a) = %d %v", e, ok)
	}
	if _, ok := h.view.ShareMember("g", "b"); ok {
		t.Fatal("ShareMember(b) after it left")
	}
}

// Bad heartbeats get Kafka's errors; group.share.max.size holds.
func TestShareHeartbeatValidation(t *testing.T) {
	h, _ := newShareHarness(t, 0, 1)
	for name, c := range map[string]struct {
		req  *kmsg.ShareGroupHeartbeatRequest
		want *kerr.Error
	}{
		"no group":      {shb("", "a", 0, "t"), kerr.InvalidRequest},
		"no member":     {shb("g", "", 0, "t"), kerr.InvalidRequest},
		"long member":   {shb("g", "0123456789012345678901234567890123456", 0, "t"), kerr.InvalidRequest},
		"epoch -2":      {shb("g", "a", -2), kerr.InvalidRequest},
		"join no topic": {shb("g", "a", 0), kerr.InvalidRequest},
	} {
		wantCode(t, name, h.shareHB(c.req).ErrorCode, c.want)
	}
	wantCode(t, "first", h.shareHB(shb("g", "a", 0, "t")).ErrorCode, nil)
	wantCode(t, "over max size", h.shareHB(shb("g", "b", 0, "t")).ErrorCode, kerr.GroupMaxSizeReached)
}

// A member that stops heartbeating is removed when its session ends on
// the coordinator's clock, through the Log; the other member then gets
// every partition.
func TestShareSessionExpiry(t *testing.T) {
	h, rl := newShareHarness(t, 300*time.Millisecond, 0)
	h.shareHB(shb("g", "a", 0, "t"))
	keep := make(chan struct{})
	done := make(chan struct{})
	go func() { // b heartbeats, a does not
		defer close(done)
		epoch := h.shareHB(shb("g", "b", 0, "t")).MemberEpoch
		for {
			select {
			case <-keep:
				return
			case <-time.After(30 * time.Millisecond):
				epoch = h.c.ShareGroupHeartbeat(context.Background(), "client", "/h", shb("g", "b", epoch)).MemberEpoch
			}
		}
	}()
	waitFor(t, "a's session to end", func() bool {
		_, ok := h.view.ShareMember("g", "a")
		return !ok
	})
	close(keep)
	<-done
	g, _ := h.view.ShareGroup("g")
	if len(g.Members) != 1 || g.Members["b"] == nil || count(g.Members["b"].Target) != 4 {
		t.Fatalf("after a expired: %+v", g.Members)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	tomb := false
	for _, r := range rl.recs {
		if r.Value == nil && string(r.Key) == string(cgKey(sgMemberKeyVersion, "g", kmsg.StringPtr("a"))) {
			tomb = true
		}
	}
	if !tomb {
		t.Fatal("a's expiry wrote no tombstone of its member record")
	}
}

// The share group records round-trip: a snapshot restores an equal View,
// replaying the records builds the same one, and a new coordinator on it
// (a failover) keeps the members in their epochs.
func TestShareSnapshotRoundTripAndFailover(t *testing.T) {
	h, rl := newShareHarness(t, 0, 0)
	req := shb("g", "a", 0, "t", "u")
	req.RackID = kmsg.StringPtr("r1")
	h.shareHB(req)
	h.shareHB(shb("g", "b", 0, "u"))
	h.shareHB(shb("g", "x", 0, "t"))
	h.shareHB(shb("g", "x", -1))
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
	g, _ := restored.ShareGroup("g")
	a := g.Members["a"]
	if a == nil || deref(a.RackID) != "r1" || len(a.Topics) != 2 || a.ClientID != "client" || g.Epoch != 4 || g.MetadataHash == 0 {
		t.Fatalf("restored group %+v, a %+v", g, a)
	}
	before, _ := h.view.ShareGroup("g")
	h.c.Close()
	c2, err := New(h.cfg, rl, h.view)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c2.Close)
	h.c = c2
	b := h.shareHB(shb("g", "b", before.Members["b"].Epoch))
	if b.ErrorCode != 0 || b.MemberEpoch != before.TargetEpoch {
		t.Fatalf("b after the failover: %s epoch %d, want the target's %d", errName(b.ErrorCode), b.MemberEpoch, before.TargetEpoch)
	}
	if after, _ := h.view.ShareGroup("g"); after.Epoch != before.Epoch {
		t.Fatalf("group epoch went from %d to %d over the failover", before.Epoch, after.Epoch)
	}
}

// A group id is a share group or another kind, never both; share groups
// are listed with type "share", described by DescribeGroups as Kafka 4.x
// does (not a classic group), and deleted when empty.
func TestShareGroupExclusiveListAndDelete(t *testing.T) {
	h, _ := newShareHarness(t, 0, 0)
	h.cgHeartbeat(hb("cg", "a", 0, []string{"t"}, nil))
	r := h.shareHB(shb("cg", "a", 0, "t"))
	wantCode(t, "share heartbeat on a consumer group", r.ErrorCode, kerr.GroupIDNotFound)
	h.shareHB(shb("sg", "a", 0, "t"))
	wantCode(t, "consumer heartbeat on a share group", h.cgHeartbeat(hb("sg", "b", 0, []string{"t"}, nil)).ErrorCode, kerr.GroupIDNotFound)
	wantCode(t, "join on a share group", h.join(joinReq(5, "sg", "", nil, time.Second)).ErrorCode, kerr.InconsistentGroupProtocol)
	wantCode(t, "commit to a share group", h.commit(commitReq(9, "sg", "", -1, "t", map[int32]int64{0: 1}, ""))[0], kerr.GroupIDNotFound)
	fetch := h.c.FetchOffsets("sg", []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}, false)
	if fetch.ErrorCode != 0 || fetch.Topics[0].Partitions[0].Offset != -1 { // Kafka: no offsets, no error
		t.Fatalf("fetch offsets of a share group: %+v", fetch)
	}
	if d := h.c.DescribeGroup("sg"); d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" {
		t.Fatalf("DescribeGroups of a share group: %+v", d)
	}
	if d := h.c.DescribeShareGroup("cg"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ShareGroupDescribe of a consumer group: %+v", d)
	}
	wantCode(t, "simple commit", h.commit(commitReq(2, "cl", "", -1, "t", map[int32]int64{0: 1}, ""))[0], nil)
	wantCode(t, "share heartbeat on a classic group", h.shareHB(shb("cl", "a", 0, "t")).ErrorCode, kerr.GroupIDNotFound)
	for id, want := range map[string]string{"sg": GroupTypeShare, "cg": GroupTypeConsumer, "cl": GroupTypeClassic, "none": ""} {
		if got := h.view.GroupType(id); got != want {
			t.Errorf("GroupType(%s) = %q, want %q", id, got, want)
		}
	}
	ls := h.c.ListGroups(nil, []string{"share"})
	if len(ls) != 1 || ls[0].Group != "sg" || ls[0].GroupType != "share" || ls[0].ProtocolType != "share" || ls[0].GroupState != "Stable" {
		t.Fatalf("share groups listed: %+v", ls)
	}
	if all := h.c.ListGroups(nil, nil); len(all) != 3 {
		t.Fatalf("all groups listed: %+v", all)
	}
	if _, err := h.c.ExpireOffsets(context.Background(), time.Now().Add(time.Hour), time.Millisecond); err != nil || !h.view.isShareGroup("sg") {
		t.Fatalf("offset expiry: %v; share group kept: %v", err, h.view.isShareGroup("sg"))
	}
	wantCode(t, "delete with a member", codeOf(h.c.DeleteGroup(context.Background(), "sg")), kerr.NonEmptyGroup)
	h.shareHB(shb("sg", "a", -1))
	if err := h.c.DeleteGroup(context.Background(), "sg"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if h.view.HasGroup("sg") {
		t.Fatal("the view still holds the deleted share group")
	}
}
