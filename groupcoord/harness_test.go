package groupcoord

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testLog is a Log that applies records to a View synchronously, as the
// partition's state machine would once Raft committed them. It can be
// made to fail or to block.
type testLog struct {
	view *View

	// mu guards fail and block, and serialises the applies, so that
	// Appends commit in call order.
	mu    sync.Mutex
	fail  error         // returned by every Append while set
	block chan struct{} // while set, Appends wait until it is closed or their ctx ends

	waiting atomic.Int32 // Appends waiting on block
}

var _ Log = (*testLog)(nil)

func (l *testLog) Append(ctx context.Context, recs []Record) error {
	l.mu.Lock()
	fail, block := l.fail, l.block
	l.mu.Unlock()
	if block != nil {
		l.waiting.Add(1)
		defer l.waiting.Add(-1)
		select {
		case <-block:
		case <-ctx.Done():
			return kerr.RequestTimedOut
		}
	}
	if fail != nil {
		return fail
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		if err := l.view.Apply(r.Key, r.Value); err != nil {
			return err
		}
	}
	return nil
}

func (l *testLog) setFail(err error) {
	l.mu.Lock()
	l.fail = err
	l.mu.Unlock()
}

// setBlock makes Appends wait; the returned func releases them.
func (l *testLog) setBlock() (release func()) {
	ch := make(chan struct{})
	l.mu.Lock()
	l.block = ch
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.block = nil
		l.mu.Unlock()
		close(ch)
	}
}

// harness is a Coordinator on a testLog, with request helpers.
type harness struct {
	t      testing.TB
	cfg    Config
	log    *testLog
	view   *View
	c      *Coordinator
	topics *countingTopics // consumer and share harnesses' topics
}

// countingTopics is testTopics as the consumer and share harnesses'
// TopicSource, counting the calls that list every topic: the harness
// fails its test if any did, unless the test subscribes by regex (the
// one request that must read every topic). So every test of a heartbeat,
// join, commit or describe shows that it costs what it names, not the
// cluster's size.
type countingTopics struct {
	TopicList
	listed  atomic.Int32
	byRegex atomic.Bool
	version atomic.Uint64 // VersionedTopics: the test moves it
}

func (c *countingTopics) Version() uint64 { return c.version.Load() }

func (c *countingTopics) All() []TopicInfo {
	c.listed.Add(1)
	return c.TopicList.All()
}

// countTopicListing gives the harness a countingTopics and checks it when
// the test ends.
func (h *harness) countTopicListing() {
	h.topics = &countingTopics{TopicList: testTopics}
	h.cfg.Topics = h.topics
	h.t.Cleanup(func() {
		if n := h.topics.listed.Load(); n > 0 && !h.topics.byRegex.Load() {
			h.t.Errorf("every topic was listed %d times by a test without a regex subscription", n)
		}
	})
}

// subscribesByRegex lets the test's requests list every topic.
func (h *harness) subscribesByRegex() { h.topics.byRegex.Store(true) }

// topics that exist: every partition 0-7 of any topic except "nope".
func testTopicExists(topic string, p int32) bool { return topic != "nope" && p >= 0 && p < 8 }

func newHarness(t testing.TB, tune func(*Config)) *harness {
	t.Helper()
	cfg := Config{
		TopicExists:           testTopicExists,
		MinSessionTimeout:     10 * time.Millisecond,
		MaxSessionTimeout:     time.Minute,
		InitialRebalanceDelay: -1,
		Logger:                slog.New(slog.DiscardHandler),
	}
	if tune != nil {
		tune(&cfg)
	}
	view := NewView()
	h := &harness{t: t, cfg: cfg, log: &testLog{view: view}, view: view}
	h.c = h.newCoordinator()
	return h
}

// newCoordinator builds a Coordinator on the harness's Log and View,
// closed when the test ends.
func (h *harness) newCoordinator() *Coordinator {
	h.t.Helper()
	c, err := New(h.cfg, h.log, h.view)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(c.Close)
	return c
}

// waitFor polls cond until it holds; it fails the test after 10 s, a
// deadlock rather than a slow run.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recv reads one answer of an asynchronous request, failing after 10 s.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for an answer")
		panic("unreachable")
	}
}

// consumerMeta is the subscription of a consumer to topics.
func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

// joinReq is a consumer's JoinGroup of version v, subscribing to t1.
func joinReq(v int16, group, member string, instance *string, session time.Duration) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = v
	req.Group = group
	req.MemberID = member
	req.InstanceID = instance
	req.SessionTimeoutMillis = int32(session / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(10 * time.Second / time.Millisecond)
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", consumerMeta("t1")
	req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	return req
}

// joinAsync sends req in a goroutine; for a new dynamic member at v4+ it
// first gets a member id with MEMBER_ID_REQUIRED, as clients do.
func (h *harness) joinAsync(c *Coordinator, req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		resp := c.JoinGroup(context.Background(), "client", "/127.0.0.1", req)
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			again := *req
			again.MemberID = resp.MemberID
			resp = c.JoinGroup(context.Background(), "client", "/127.0.0.1", &again)
		}
		ch <- resp
	}()
	return ch
}

func (h *harness) join(req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	h.t.Helper()
	return recv(h.t, h.joinAsync(h.c, req))
}

func syncReq(v int16, group, member string, instance *string, gen int32, assign map[string][]byte) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.InstanceID, req.Generation = v, group, member, instance, gen
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	return req
}

func (h *harness) syncAsync(req *kmsg.SyncGroupRequest) <-chan *kmsg.SyncGroupResponse {
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { ch <- h.c.SyncGroup(context.Background(), req) }()
	return ch
}

func (h *harness) sync(req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	h.t.Helper()
	return recv(h.t, h.syncAsync(req))
}

func (h *harness) heartbeat(v int16, group, member string, instance *string, gen int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.InstanceID, req.Generation = v, group, member, instance, gen
	return h.c.Heartbeat(req).ErrorCode
}

// commitReq commits offsets of topic t's partitions (partition → offset).
func commitReq(v int16, group, member string, gen int32, topic string, offsets map[int32]int64, meta string) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = v, group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p := range int32(8) {
		o, ok := offsets[p]
		if !ok {
			continue
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, o, 3, &meta
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	return req
}

// commitErrs returns the error codes of a commit's partitions, in order.
func (h *harness) commit(req *kmsg.OffsetCommitRequest) []int16 {
	var out []int16
	for _, t := range h.c.OffsetCommit(context.Background(), req).Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

func (h *harness) leave(v int16, group string, members ...kmsg.LeaveGroupRequestMember) *kmsg.LeaveGroupResponse {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = v, group
	if v < 3 {
		req.MemberID = members[0].MemberID
	} else {
		req.Members = members
	}
	return h.c.LeaveGroup(req)
}

func leaving(id string, instance *string) kmsg.LeaveGroupRequestMember {
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.InstanceID = id, instance
	return m
}

func (h *harness) describe(group string) kmsg.DescribeGroupsResponseGroup {
	return h.c.DescribeGroup(group)
}

// fetch returns a group's committed offset of a partition (-1 if none).
func (h *harness) fetch(group, topic string, p int32) (int64, string) {
	t := kmsg.NewOffsetFetchRequestGroupTopic()
	t.Topic, t.Partitions = topic, []int32{p}
	r := h.c.FetchOffsets(group, []kmsg.OffsetFetchRequestGroupTopic{t}, false)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		h.t.Fatalf("fetch %s %s/%d: %+v", group, topic, p, r)
	}
	rp := r.Topics[0].Partitions[0]
	return rp.Offset, deref(rp.Metadata)
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

func wantCode(t testing.TB, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: got %s, want %s", what, errName(got), errName(w))
	}
}

// stableOne makes a one-member group stable at latest versions; it
// returns the member id and generation.
func (h *harness) stableOne(group string, instance *string) (string, int32) {
	h.t.Helper()
	j := h.join(joinReq(9, group, "", instance, 10*time.Second))
	wantCode(h.t, "join", j.ErrorCode, nil)
	s := h.sync(syncReq(5, group, j.MemberID, instance, j.Generation, map[string][]byte{j.MemberID: []byte("a")}))
	wantCode(h.t, "sync", s.ErrorCode, nil)
	return j.MemberID, j.Generation
}
