package groupcoord

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic ids of the consumer group tests: "t" has 4 partitions, "u" 3.
var (
	tID = TopicID{1}
	uID = TopicID{2}
)

func testTopics() []TopicInfo {
	return []TopicInfo{{Name: "t", ID: tID, Partitions: 4}, {Name: "u", ID: uID, Partitions: 3}}
}

// recLog is a testLog that also keeps every record it applied, in order.
type recLog struct {
	*testLog
	mu   sync.Mutex // guards recs
	recs []Record
}

func (l *recLog) Append(ctx context.Context, recs []Record) error {
	if err := l.testLog.Append(ctx, recs); err != nil {
		return err
	}
	l.mu.Lock()
	l.recs = append(l.recs, recs...)
	l.mu.Unlock()
	return nil
}

// newConsumerHarness is a harness whose coordinator serves consumer
// groups on testTopics, with a session of session (0: a minute).
func newConsumerHarness(t testing.TB, session time.Duration) (*harness, *recLog) {
	t.Helper()
	if session == 0 {
		session = time.Minute
	}
	h := &harness{t: t}
	h.cfg = Config{
		TopicExists: testTopicExists, MinSessionTimeout: 10 * time.Millisecond, MaxSessionTimeout: time.Minute,
		InitialRebalanceDelay: -1,
		Consumer: ConsumerConfig{SessionTimeout: session, MinSessionTimeout: time.Millisecond, MaxSessionTimeout: time.Minute,
			HeartbeatInterval: max(session/10, time.Millisecond), MinHeartbeatInterval: time.Millisecond},
	}
	h.cfg.Logger = slog.New(slog.DiscardHandler)
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

// hb is a ConsumerGroupHeartbeat v1 of group g: topics nil leaves the
// subscription as it is, owned nil says nothing of owned partitions.
func hb(g, member string, epoch int32, topics []string, owned Assignment) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = g, member, epoch
	req.RebalanceTimeoutMillis = -1
	req.SubscribedTopicNames = topics
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 60000
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, id := range owned.sortedIDs() {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: owned[id]})
		}
	}
	return req
}

func (h *harness) cgHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	return h.c.ConsumerGroupHeartbeat(context.Background(), "client", "/127.0.0.1", nil, req)
}

// assigned is a heartbeat answer's assignment; nil if it carried none.
func assigned(resp *kmsg.ConsumerGroupHeartbeatResponse) Assignment {
	if resp.Assignment == nil {
		return nil
	}
	a := Assignment{}
	for _, t := range resp.Assignment.Topics {
		a[t.TopicID] = t.Partitions
	}
	return a
}

func count(a Assignment) int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// Revoke before assign: a partition moves to a new member only after its
// previous owner said it no longer owns it; meanwhile the new member
// waits in UNRELEASED_PARTITIONS and the owner stays in its epoch.
func TestConsumerReconcileRevokesBeforeAssign(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	a := h.cgHeartbeat(hb("g", "a", 0, []string{"t"}, nil))
	wantCode(t, "a joins", a.ErrorCode, nil)
	if a.MemberEpoch != 1 || count(assigned(a)) != 4 {
		t.Fatalf("a joined in epoch %d with %v, want epoch 1 with the 4 partitions", a.MemberEpoch, assigned(a))
	}
	b := h.cgHeartbeat(hb("g", "b", 0, []string{"t"}, nil))
	if b.MemberEpoch != 2 || count(assigned(b)) != 0 {
		t.Fatalf("b joined in epoch %d with %v, want epoch 2 with nothing yet (a holds it all)", b.MemberEpoch, assigned(b))
	}
	g, _ := h.view.ConsumerGroup("g")
	if m := g.Members["b"]; m.State != memberUnreleasedPartitions || count(m.Target) != 2 {
		t.Fatalf("b is %+v, want UNRELEASED_PARTITIONS with a target of 2", m)
	}
	a = h.cgHeartbeat(hb("g", "a", 1, nil, Assignment{tID: {0, 1, 2, 3}}))
	if a.MemberEpoch != 1 || count(assigned(a)) != 2 {
		t.Fatalf("a asked to revoke: epoch %d with %v, want epoch 1 with 2 partitions", a.MemberEpoch, assigned(a))
	}
	kept := assigned(a)[tID]
	if b = h.cgHeartbeat(hb("g", "b", 2, nil, Assignment{})); count(assigned(b)) != 0 && b.Assignment != nil {
		t.Fatalf("b got %v before a revoked", assigned(b))
	}
	a = h.cgHeartbeat(hb("g", "a", 1, nil, Assignment{tID: kept}))
	if a.MemberEpoch != 2 {
		t.Fatalf("a revoked: epoch %d, want 2", a.MemberEpoch)
	}
	b = h.cgHeartbeat(hb("g", "b", 2, nil, Assignment{}))
	got := assigned(b)[tID]
	if len(got) != 2 || slices.ContainsFunc(got, func(p int32) bool { return slices.Contains(kept, p) }) {
		t.Fatalf("b got %v once a revoked (a kept %v)", got, kept)
	}
	if d := h.c.DescribeConsumerGroup("g"); d.State != "Stable" || d.Epoch != 2 || d.AssignmentEpoch != 2 {
		t.Fatalf("described %s epoch %d/%d, want Stable 2/2", d.State, d.Epoch, d.AssignmentEpoch)
	}
}

// Epochs fence stale members: a newer epoch than the member's, an older
// one other than its previous epoch, or its previous epoch with
// partitions it no longer has is FENCED_MEMBER_EPOCH; an unknown member
// is UNKNOWN_MEMBER_ID, so is a member after leaving.
func TestConsumerEpochFencing(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	h.cgHeartbeat(hb("g", "a", 0, []string{"t"}, nil))
	h.cgHeartbeat(hb("g", "b", 0, []string{"t"}, nil))
	a := h.cgHeartbeat(hb("g", "a", 1, nil, Assignment{tID: {0, 1, 2, 3}}))
	kept := assigned(a)[tID]
	a = h.cgHeartbeat(hb("g", "a", 1, nil, Assignment{tID: kept}))
	if a.MemberEpoch != 2 {
		t.Fatalf("a at epoch %d, want 2", a.MemberEpoch)
	}
	wantCode(t, "newer epoch", h.cgHeartbeat(hb("g", "a", 3, nil, nil)).ErrorCode, kerr.FencedMemberEpoch)
	wantCode(t, "previous epoch with a subset", h.cgHeartbeat(hb("g", "a", 1, nil, Assignment{tID: kept[:1]})).ErrorCode, nil)
	wantCode(t, "previous epoch, partitions it lost", h.cgHeartbeat(hb("g", "a", 1, nil, Assignment{tID: {0, 1, 2, 3}})).ErrorCode, kerr.FencedMemberEpoch)
	wantCode(t, "previous epoch, owned unsaid", h.cgHeartbeat(hb("g", "a", 1, nil, nil)).ErrorCode, kerr.FencedMemberEpoch)
	wantCode(t, "unknown member", h.cgHeartbeat(hb("g", "zz", 2, nil, nil)).ErrorCode, kerr.UnknownMemberID)
	leave := h.cgHeartbeat(hb("g", "a", -1, nil, nil))
	if leave.ErrorCode != 0 || leave.MemberEpoch != -1 {
		t.Fatalf("leave: %s epoch %d", errName(leave.ErrorCode), leave.MemberEpoch)
	}
	wantCode(t, "after leaving", h.cgHeartbeat(hb("g", "a", 2, nil, nil)).ErrorCode, kerr.UnknownMemberID)
	if g, _ := h.view.ConsumerGroup("g"); g.Epoch != 3 || len(g.Members) != 1 {
		t.Fatalf("after a left: epoch %d, %d members; want 3 and 1", g.Epoch, len(g.Members))
	}
}

// Bad heartbeats get Kafka's errors and change nothing.
func TestConsumerHeartbeatValidation(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	noSub := hb("g", "a", 0, nil, nil)
	owned := hb("g", "a", 0, []string{"t"}, nil)
	owned.Topics = append(owned.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tID, Partitions: []int32{0}})
	badAssignor := hb("g", "a", 0, []string{"t"}, nil)
	badAssignor.ServerAssignor = kmsg.StringPtr("sticky")
	badRegex := hb("g", "a", 0, nil, nil)
	badRegex.SubscribedTopicRegex = kmsg.StringPtr("(")
	staticNoID := hb("g", "a", -2, nil, nil)
	for _, tc := range []struct {
		name string
		req  *kmsg.ConsumerGroupHeartbeatRequest
		want *kerr.Error
	}{
		{"empty member id", hb("g", "", 0, []string{"t"}, nil), kerr.InvalidRequest},
		{"empty group", hb("", "a", 0, []string{"t"}, nil), kerr.InvalidGroupID},
		{"no subscription on join", noSub, kerr.InvalidRequest},
		{"owned partitions on join", owned, kerr.InvalidRequest},
		{"unknown assignor", badAssignor, kerr.UnsupportedAssignor},
		{"bad regex", badRegex, kerr.InvalidRegularExpression},
		{"static leave without instance id", staticNoID, kerr.InvalidRequest},
		{"epoch -3", hb("g", "a", -3, nil, nil), kerr.InvalidRequest},
	} {
		wantCode(t, tc.name, h.cgHeartbeat(tc.req).ErrorCode, tc.want)
	}
	if h.view.HasGroup("g") {
		t.Fatal("a refused heartbeat created the group")
	}
}

// A static member that leaves with epoch -2 keeps its partitions for its
// instance id: another member with that instance id takes them over
// without a rebalance; while the first is active, the id is
// UNRELEASED_INSTANCE_ID.
func TestConsumerStaticMemberReplaced(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	join := func(member string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := hb("g", member, 0, []string{"t"}, nil)
		req.InstanceID = kmsg.StringPtr("i1")
		return h.cgHeartbeat(req)
	}
	a := join("a")
	wantCode(t, "a joins", a.ErrorCode, nil)
	wantCode(t, "b joins as i1 while a is active", join("b").ErrorCode, kerr.UnreleasedInstanceID)
	leave := hb("g", "a", -2, nil, nil)
	leave.InstanceID = kmsg.StringPtr("i1")
	if r := h.cgHeartbeat(leave); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %s epoch %d", errName(r.ErrorCode), r.MemberEpoch)
	}
	b := join("b")
	wantCode(t, "b replaces a", b.ErrorCode, nil)
	if b.MemberEpoch != a.MemberEpoch || count(assigned(b)) != 4 {
		t.Fatalf("b took over in epoch %d with %v, want a's epoch %d and its 4 partitions", b.MemberEpoch, assigned(b), a.MemberEpoch)
	}
	g, _ := h.view.ConsumerGroup("g")
	if _, ok := g.Members["a"]; ok || g.Epoch != 1 {
		t.Fatalf("group after the replacement: %v members, epoch %d; want only b, epoch 1", slices.Sorted(maps.Keys(g.Members)), g.Epoch)
	}
}

// A regex subscription gets the matching topics its member may DESCRIBE
// (Kafka resolves a regex with the requesting member's permissions); on a
// new coordinator, before the member heartbeats again, it keeps what its
// target holds, so another member's heartbeat moves nothing.
func TestConsumerRegexSubscription(t *testing.T) {
	h, rl := newConsumerHarness(t, 0)
	req := hb("g", "a", 0, nil, nil)
	req.SubscribedTopicRegex = kmsg.StringPtr("t|u")
	h.subscribesByRegex()
	onlyT := func(topic string) bool { return topic == "t" }
	a := h.c.ConsumerGroupHeartbeat(context.Background(), "client", "/h", onlyT, req)
	if got := assigned(a); count(got) != 4 || len(got[tID]) != 4 {
		t.Fatalf("a's regex gave %v, want t's 4 partitions only (u is not describable)", got)
	}
	h.c.Close()
	c2, err := New(h.cfg, rl, h.view)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c2.Close)
	h.c = c2
	b := h.cgHeartbeat(hb("g", "b", 0, []string{"u"}, nil))
	wantCode(t, "b joins", b.ErrorCode, nil)
	g, _ := h.view.ConsumerGroup("g")
	if tgt := g.Members["a"].Target; len(tgt[tID]) != 4 || len(tgt[uID]) != 0 {
		t.Fatalf("a's target after the failover: %v, want t only", tgt)
	}
	if count(assigned(b)) != 3 {
		t.Fatalf("b got %v, want u's 3 partitions", assigned(b))
	}
}

// Offset expiry treats a consumer group like a classic one: offsets of
// topics no member subscribes to expire, and an empty group left without
// offsets is deleted.
func TestConsumerGroupOffsetExpiry(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	h.cgHeartbeat(hb("g", "a", 0, []string{"t"}, nil))
	wantCode(t, "commit t", h.commit(commitReq(9, "g", "a", 1, "t", map[int32]int64{0: 1}, ""))[0], nil)
	wantCode(t, "commit u", h.commit(commitReq(9, "g", "a", 1, "u", map[int32]int64{0: 1}, ""))[0], nil)
	later := time.Now().Add(time.Hour)
	if _, err := h.c.ExpireOffsets(context.Background(), later, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.view.Offset("g", "u", 0); ok {
		t.Fatal("u's offset outlived retention though no member subscribes to u")
	}
	if _, ok := h.view.Offset("g", "t", 0); !ok {
		t.Fatal("t's offset expired while a member subscribes to t")
	}
	h.cgHeartbeat(hb("g", "a", -1, nil, nil))
	out, err := h.c.ExpireOffsets(context.Background(), later, time.Minute)
	if err != nil || out.Groups != 1 {
		t.Fatalf("expiry of the empty group: %+v %v", out, err)
	}
	if h.view.HasGroup("g") {
		t.Fatal("the empty consumer group without offsets is still there")
	}
}

// Heartbeats for groups that never come to be leave nothing behind on
// the coordinator.
func TestConsumerRefusedGroupsLeaveNothing(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	j := h.join(classicJoinT("k", ""))
	wantCode(t, "classic join", j.ErrorCode, nil)
	wantCode(t, "classic sync", h.sync(syncReq(5, "k", j.MemberID, nil, j.Generation, map[string][]byte{j.MemberID: assignmentT(0)})).ErrorCode, nil)
	h.c.Close()
	h.cfg.Consumer.MigrationPolicy = MigrationDisabled
	c2, err := New(h.cfg, h.log, h.view)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c2.Close)
	h.c = c2
	for range 100 {
		h.cgHeartbeat(hb("k", "x", 0, []string{"t"}, nil)) // GROUP_ID_NOT_FOUND: a classic group
		h.cgHeartbeat(hb("nope", "x", 1, nil, nil))        // UNKNOWN_MEMBER_ID: no such group
	}
	h.c.mu.Lock()
	n := len(h.c.cgroups)
	h.c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d consumer group entries left behind", n)
	}
}

// A regex member's heartbeats match its regex against every topic once
// while the topics' version stays (the coordinator keeps the matches),
// and again once it moves; the member's permissions still apply to each
// heartbeat.
func TestConsumerRegexMatchesKeptUntilTopicsChange(t *testing.T) {
	h, _ := newConsumerHarness(t, 0)
	h.subscribesByRegex()
	req := hb("g", "a", 0, nil, nil)
	req.SubscribedTopicRegex = kmsg.StringPtr("t|u")
	resp := h.cgHeartbeat(req)
	wantCode(t, "a joins", resp.ErrorCode, nil)
	onlyT := func(topic string) bool { return topic == "t" }
	for range 3 {
		resp = h.c.ConsumerGroupHeartbeat(context.Background(), "client", "/h", onlyT, hb("g", "a", resp.MemberEpoch, nil, nil))
		wantCode(t, "a heartbeats", resp.ErrorCode, nil)
	}
	if n := h.topics.listed.Load(); n != 1 {
		t.Fatalf("four heartbeats of a regex member listed every topic %d times, want once", n)
	}
	if g, _ := h.view.ConsumerGroup("g"); len(g.Members["a"].Target[uID]) != 0 {
		t.Fatalf("a's target %v holds u, which it may not describe", g.Members["a"].Target)
	}
	h.topics.version.Add(1)
	h.cgHeartbeat(hb("g", "a", resp.MemberEpoch, nil, nil))
	if n := h.topics.listed.Load(); n != 2 {
		t.Fatalf("a heartbeat after the topics changed listed them %d times in all, want twice", n)
	}
}
