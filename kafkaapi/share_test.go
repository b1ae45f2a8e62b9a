package kafkaapi

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/sharepart"
)

// memShareStore is a sharepart.Store in memory.
type memShareStore struct {
	mu     sync.Mutex // guards m and writes
	m      map[sharepart.Key]sharepart.Snapshot
	writes int
}

func (s *memShareStore) Read(_ context.Context, k sharepart.Key, _ int32) (sharepart.Snapshot, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	return v, ok, nil
}

func (s *memShareStore) Write(_ context.Context, k sharepart.Key, v sharepart.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = v
	s.writes++
	return nil
}

// shareBackend adds share groups and authorization to the fake backend.
type shareBackend struct {
	*authzBackend
	mgr      *sharepart.Manager
	sessions *sharepart.Sessions
	store    *memShareStore

	askedShareKey string // the last ShareCoordinatorNode key
}

func (b *shareBackend) ResetShareStates(ctx context.Context, group string, tps []sharepart.TopicPartition, starts []int64) []error {
	errs := make([]error, len(tps))
	for i, tp := range tps {
		key := sharepart.Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
		cur, _, _ := b.store.Read(ctx, key, -1)
		errs[i] = b.store.Write(ctx, key, sharepart.Snapshot{StateEpoch: cur.StateEpoch + 1, StartOffset: starts[i]})
	}
	return errs
}

func (b *shareBackend) ReadShareStates(ctx context.Context, group string, tps []sharepart.TopicPartition) []ShareState {
	out := make([]ShareState, len(tps))
	for i, tp := range tps {
		out[i].Snapshot, out[i].OK, out[i].Err = b.store.Read(ctx, sharepart.Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}, -1)
	}
	return out
}

// LatestOffsets reads each partition's high watermark from the fake,
// NOT_LEADER_OR_FOLLOWER where it does not lead.
func (b *shareBackend) LatestOffsets(_ context.Context, parts []TopicPartition) []LatestOffset {
	out := make([]LatestOffset, len(parts))
	for i, tp := range parts {
		p, err := b.Partition(tp.Topic, tp.Partition)
		switch {
		case err != nil:
			out[i] = LatestOffset{Offset: -1, Err: err}
		case !p.IsLeader():
			out[i] = LatestOffset{Offset: -1, Err: kerr.NotLeaderForPartition}
		default:
			out[i] = LatestOffset{Offset: p.HighWatermark()}
		}
	}
	return out
}

func (b *shareBackend) ShareManager() *sharepart.Manager         { return b.mgr }
func (b *shareBackend) ShareSessions() *sharepart.Sessions       { return b.sessions }
func (b *shareBackend) ShareLockDurationMs() int32               { return 30000 }
func (b *shareBackend) TopicNameByID(id [16]byte) (string, bool) { return b.topicByID(id) }

func (b *fakeBackend) topicByID(id [16]byte) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, t := range b.topics {
		if t.id == id {
			return name, true
		}
	}
	return "", false
}

// startShareServer serves a fake backend with topic "s" (2 partitions,
// 3 records in partition 0) and share groups; deny refuses requests.
func startShareServer(t *testing.T, deny func(acl.Request) bool) (*harness, [16]byte) {
	return startShareServerCfg(t, Config{}, deny)
}

func startShareServerCfg(t *testing.T, srvCfg Config, deny func(acl.Request) bool) (*harness, [16]byte) {
	t.Helper()
	h := startServerWith(t, srvCfg, func(fb *fakeBackend) Backend {
		ab := &authzBackend{fakeBackend: fb, allowed: func(r acl.Request) bool { return !deny(r) }}
		cfg := sharepart.ManagerConfig{
			Partition:     sharepart.Config{LockDurationMs: 30000, DeliveryLimit: 2, MaxLocks: 100},
			ResetEarliest: true, Now: time.Now,
		}
		store := &memShareStore{m: map[sharepart.Key]sharepart.Snapshot{}}
		return &shareBackend{authzBackend: ab, mgr: sharepart.NewManager(cfg, store), sessions: sharepart.NewSessions(2), store: store}
	})
	parts := h.fb.addTopic("s", 2)
	if _, err := parts[0].Produce(makeBatch(1, "a", "b", "c"))(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.fb.mu.Lock()
	id := h.fb.topics["s"].id
	h.fb.groups.coordOverride = &resetCoordinator{}
	h.fb.mu.Unlock()
	return h, id
}

// resetCoordinator knows the groups the share-offset resets check: the
// empty share groups g and nodelete, busy with a member, and a classic
// group.
type resetCoordinator struct{ baseGroupCoordinator }

func (resetCoordinator) DescribeShareGroup(group string) kmsg.ShareGroupDescribeResponseGroup {
	g := kmsg.NewShareGroupDescribeResponseGroup()
	g.GroupID, g.GroupState = group, "Empty"
	switch group {
	case "g", "nodelete":
	case "busy":
		g.GroupState, g.Members = "Stable", []kmsg.ShareGroupDescribeResponseGroupMember{kmsg.NewShareGroupDescribeResponseGroupMember()}
	default:
		g.ErrorCode = kerr.GroupIDNotFound.Code
	}
	return g
}

func (resetCoordinator) ListGroups(_, types []string) []kmsg.ListGroupsResponseGroup {
	g := kmsg.NewListGroupsResponseGroup()
	g.Group, g.GroupType = "classic", "classic"
	return []kmsg.ListGroupsResponseGroup{g}
}

func shareFetchReq(member string, epoch int32, id [16]byte, acks map[int32][]int8) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	group := "g"
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
	req.MaxRecords, req.MaxBytes = 10, 1<<20
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = id
	for p := range int32(2) {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		if types, ok := acks[p]; ok {
			b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, int64(len(types)-1), types
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func acquired(resp *kmsg.ShareFetchResponse) (n int, count int16, ackCode int16) {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			ackCode = max(ackCode, p.AcknowledgeErrorCode)
			for _, r := range p.AcquiredRecords {
				n += int(r.LastOffset - r.FirstOffset + 1)
				count = r.DeliveryCount
			}
		}
	}
	return n, count, ackCode
}

// TestShareFetchSessionsAndAcks: a session's epochs, piggy-backed
// acknowledgements, the delivery limit, and the errors Kafka answers.
func TestShareFetchSessionsAndAcks(t *testing.T) {
	h, id := startShareServer(t, func(acl.Request) bool { return false })
	c := h.dial()
	fetch := func(req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
		return c.roundTrip(req).(*kmsg.ShareFetchResponse)
	}
	resp := fetch(shareFetchReq("m", 0, id, nil))
	if n, count, _ := acquired(resp); resp.ErrorCode != 0 || n != 3 || count != 1 || resp.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("first fetch: error %d, %d records, count %d", resp.ErrorCode, n, count)
	}
	if resp := fetch(shareFetchReq("m", 3, id, nil)); resp.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("wrong epoch: %d", resp.ErrorCode)
	}
	if resp := fetch(shareFetchReq("x", 1, id, nil)); resp.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: %d", resp.ErrorCode)
	}
	if resp := fetch(shareFetchReq("x", 0, id, map[int32][]int8{0: {1}})); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("acks opening a session: %d", resp.ErrorCode)
	}
	// Release all three: they come back counted twice.
	resp = fetch(shareFetchReq("m", 1, id, map[int32][]int8{0: {2, 2, 2}}))
	if n, count, code := acquired(resp); n != 3 || count != 2 || code != 0 {
		t.Fatalf("after release: %d records, count %d, ack %d", n, count, code)
	}
	// Released at the limit (2), they are archived: nothing comes back.
	resp = fetch(shareFetchReq("m", 2, id, map[int32][]int8{0: {2, 2, 2}}))
	if n, _, code := acquired(resp); n != 0 || code != 0 {
		t.Fatalf("past the delivery limit: %d records, ack %d", n, code)
	}
	resp = fetch(shareFetchReq("m", 3, id, map[int32][]int8{0: {1}}))
	if _, _, code := acquired(resp); code != kerr.InvalidRecordState.Code {
		t.Fatalf("acknowledging an archived record: %d", code)
	}
	if resp := fetch(shareFetchReq("m", 4, id, map[int32][]int8{0: {9}})); resp.ErrorCode != 0 {
		t.Fatalf("unknown ack type: top-level %d", resp.ErrorCode)
	} else if _, _, code := acquired(resp); code != kerr.InvalidRequest.Code {
		t.Fatalf("unknown ack type: %d", code)
	}
	// The session limit is 2; closing one frees a place.
	fetch(shareFetchReq("m2", 0, id, nil))
	if resp := fetch(shareFetchReq("m3", 0, id, nil)); resp.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("third session: %d", resp.ErrorCode)
	}
	close := shareFetchReq("m2", -1, id, nil)
	close.Topics = nil
	if resp := fetch(close); resp.ErrorCode != 0 {
		t.Fatalf("close: %d", resp.ErrorCode)
	}
	if resp := fetch(shareFetchReq("m3", 0, id, nil)); resp.ErrorCode != 0 {
		t.Fatalf("session after a close: %d", resp.ErrorCode)
	}
	if resp := fetch(shareFetchReq(strings.Repeat("x", 37), 0, id, nil)); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("long member id: %d", resp.ErrorCode)
	}
}

// TestShareAcknowledgeAndACLs: ShareAcknowledge's session rules and
// codes, READ on the group and the topic, and NOT_LEADER_OR_FOLLOWER.
func TestShareAcknowledgeAndACLs(t *testing.T) {
	h, id := startShareServer(t, func(r acl.Request) bool { return r.Name == "denied" })
	c := h.dial()
	resp := c.roundTrip(shareFetchReq("m", 0, id, nil)).(*kmsg.ShareFetchResponse)
	if n, _, _ := acquired(resp); n != 3 {
		t.Fatalf("acquired %d", n)
	}
	ack := func(epoch int32, types ...int8) *kmsg.ShareAcknowledgeResponse {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		group, member := "g", "m"
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 0, types
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.roundTrip(req).(*kmsg.ShareAcknowledgeResponse)
	}
	if r := ack(0, 1); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 0: %d", r.ErrorCode)
	}
	if r := ack(1, 1); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accept: %+v", r)
	}
	if r := ack(2, 1); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("accept twice: %+v", r)
	}
	if r := ack(3, 4); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("renew before v2: %+v", r)
	}
	h.fb.mu.Lock()
	p := h.fb.topics["s"].partitions[0]
	h.fb.mu.Unlock()
	p.mu.Lock()
	p.leader = false
	p.mu.Unlock()
	if r := ack(4, 1); r.Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("not leader: %+v", r)
	}
	group, member := "denied", "m"
	req := shareFetchReq(member, 0, id, nil)
	req.GroupID = &group
	if r := c.roundTrip(req).(*kmsg.ShareFetchResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("denied group: %d", r.ErrorCode)
	}
}

// TestDescribeShareGroupOffsets: the persisted start offsets, all topics
// or the named ones (an unknown one UNKNOWN_TOPIC_OR_PARTITION), and
// DESCRIBE on the group.
func TestDescribeShareGroupOffsets(t *testing.T) {
	h, id := startShareServer(t, func(r acl.Request) bool { return r.Name == "denied" })
	c := h.dial()
	resp := c.roundTrip(shareFetchReq("m", 0, id, nil)).(*kmsg.ShareFetchResponse)
	c.roundTrip(shareFetchReq("m", 1, id, map[int32][]int8{0: {1, 1}}))
	describe := func(group string, topics ...string) kmsg.DescribeShareGroupOffsetsResponseGroup {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = group
		for _, name := range topics {
			rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			rt.Topic, rt.Partitions = name, []int32{0, 1}
			rg.Topics = append(rg.Topics, rt)
		}
		req.Groups = append(req.Groups, rg)
		return c.roundTrip(req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
	}
	all := describe("g")
	// Both partitions have state: fetching initialised them.
	if len(all.Topics) != 1 || len(all.Topics[0].Partitions) != 2 || all.Topics[0].Partitions[0].StartOffset != 2 ||
		all.Topics[0].Partitions[1].StartOffset != 0 || all.Topics[0].TopicID != id {
		t.Fatalf("all topics: %+v (fetch %+v)", all, resp)
	}
	if none := describe("other"); len(none.Topics) != 0 {
		t.Fatalf("a group nobody used: %+v", none)
	}
	named := describe("other", "s", "nope")
	if p := named.Topics[0].Partitions; len(p) != 2 || p[0].StartOffset != -1 || p[1].StartOffset != -1 {
		t.Fatalf("named: %+v", named)
	}
	if p := named.Topics[1].Partitions; p[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", named.Topics[1])
	}
	if g := describe("denied"); g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("denied group: %+v", g)
	}
}

// TestShareFetchWakesForReleasedRecords: a ShareFetch waiting for records
// (here with no bound on its wait) is woken when another member releases
// some, as it is by new records.
func TestShareFetchWakesForReleasedRecords(t *testing.T) {
	h, id := startShareServerCfg(t, Config{MaxFetchWait: time.Hour}, func(acl.Request) bool { return false })
	holder, waiter := h.dial(), h.dial()
	if n, _, _ := acquired(holder.roundTrip(shareFetchReq("a", 0, id, nil)).(*kmsg.ShareFetchResponse)); n != 3 {
		t.Fatalf("a acquired %d", n)
	}
	waiter.roundTrip(shareFetchReq("b", 0, id, nil)) // opens b's session; nothing to acquire
	req := shareFetchReq("b", 1, id, nil)
	req.MaxWaitMillis = int32(time.Hour / time.Millisecond)
	done := make(chan *kmsg.ShareFetchResponse, 1)
	go func() { done <- waiter.roundTrip(req).(*kmsg.ShareFetchResponse) }()
	time.Sleep(50 * time.Millisecond) // let b's fetch start waiting (it is correct either way)
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	group, member := "g", "a"
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &group, &member, 1
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{2}}}
	rt.Partitions = append(rt.Partitions, rp)
	ack.Topics = append(ack.Topics, rt)
	if r := holder.roundTrip(ack).(*kmsg.ShareAcknowledgeResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("release: %+v", r)
	}
	select {
	case resp := <-done:
		if n, count, _ := acquired(resp); n != 1 || count != 2 {
			t.Fatalf("b acquired %d records, count %d", n, count)
		}
	case <-time.After(failsafe):
		t.Fatal("the waiting fetch was not woken by the release")
	}
}

// TestShareSessionEndsWithItsConnection: a session whose connection
// closed is gone (its place in the bounded cache too) and its member's
// records are released, as in Kafka.
func TestShareSessionEndsWithItsConnection(t *testing.T) {
	h, id := startShareServer(t, func(acl.Request) bool { return false })
	first, second := h.dial(), h.dial()
	first.roundTrip(shareFetchReq("m", 0, id, nil))
	second.roundTrip(shareFetchReq("m2", 0, id, nil))
	if r := second.roundTrip(shareFetchReq("m3", 0, id, nil)).(*kmsg.ShareFetchResponse); r.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("third session: %d", r.ErrorCode)
	}
	first.nc.Close()
	deadline := time.Now().Add(failsafe)
	n := 0
	var count int16
	for {
		r := second.roundTrip(shareFetchReq("m3", 0, id, nil)).(*kmsg.ShareFetchResponse)
		if r.ErrorCode == 0 {
			n, count, _ = acquired(r)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the closed connection's session kept its place: %d", r.ErrorCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := second.roundTrip(shareFetchReq("m", 1, id, nil)).(*kmsg.ShareFetchResponse); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("the closed connection's session: %d", r.ErrorCode)
	}
	// m's records were released when its connection closed.
	for epoch := int32(1); n == 0; epoch++ {
		if time.Now().After(deadline) {
			t.Fatal("the closed connection's records were not released")
		}
		req := shareFetchReq("m3", epoch, id, nil)
		req.MaxWaitMillis = 100
		n, count, _ = acquired(second.roundTrip(req).(*kmsg.ShareFetchResponse))
	}
	if n != 3 || count != 2 {
		t.Fatalf("acquired %d records with count %d, want m's 3 with count 2", n, count)
	}
}

// TestAlterAndDeleteShareGroupOffsets: the checks of the resets (READ or
// DELETE on the group, the group's type and emptiness, READ on the topic,
// known partitions, offsets not negative) and what they store.
func TestAlterAndDeleteShareGroupOffsets(t *testing.T) {
	h, id := startShareServer(t, func(r acl.Request) bool {
		return r.Name == "denied" || (r.Resource == acl.ResourceGroup && r.Operation == acl.OpDelete && r.Name == "nodelete")
	})
	c := h.dial()
	alter := func(group, topic string, p int32, at int64) *kmsg.AlterShareGroupOffsetsResponse {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: p, StartOffset: at}}
		req.Topics = append(req.Topics, rt)
		return c.roundTrip(req).(*kmsg.AlterShareGroupOffsetsResponse)
	}
	code := func(r *kmsg.AlterShareGroupOffsetsResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }
	if r := alter("denied", "s", 0, 1); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("denied group: %+v", r)
	}
	for _, tc := range []struct {
		topic string
		p     int32
		at    int64
		want  int16
	}{
		{"s", 5, 1, kerr.UnknownTopicOrPartition.Code},
		{"s", 0, -2, kerr.InvalidRequest.Code},
		{"nope", 0, 1, kerr.UnknownTopicOrPartition.Code},
		{"denied", 0, 1, kerr.TopicAuthorizationFailed.Code},
		{"s", 0, 2, 0},
	} {
		if got := code(alter("g", tc.topic, tc.p, tc.at)); got != tc.want {
			t.Fatalf("alter %s-%d to %d: %d, want %d", tc.topic, tc.p, tc.at, got, tc.want)
		}
	}
	sb := h.srv.backend.(*shareBackend)
	if s, ok, _ := sb.store.Read(context.Background(), sharepart.Key{Group: "g", TopicID: id}, -1); !ok || s.StartOffset != 2 || s.StateEpoch != 1 {
		t.Fatalf("altered state %+v", s)
	}
	del := func(group string) *kmsg.DeleteShareGroupOffsetsResponse {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = group
		req.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "s"}, {Topic: "nope"}}
		return c.roundTrip(req).(*kmsg.DeleteShareGroupOffsetsResponse)
	}
	if r := del("nodelete"); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("delete without DELETE: %+v", r)
	}
	if r := del("g"); r.ErrorCode != 0 || r.Topics[0].ErrorCode != 0 || r.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %+v", r)
	}
	if s, _, _ := sb.store.Read(context.Background(), sharepart.Key{Group: "g", TopicID: id}, -1); s.StartOffset != -1 || s.StateEpoch != 2 {
		t.Fatalf("deleted state %+v", s)
	}
	// As Kafka: a group with members is refused, a group of another type
	// is not found; an unknown one is an empty share group.
	for _, tc := range []struct {
		group           string
		alterW, deleteW int16
	}{
		{"busy", kerr.NonEmptyGroup.Code, kerr.NonEmptyGroup.Code},
		{"classic", kerr.GroupIDNotFound.Code, kerr.GroupIDNotFound.Code},
		{"fresh", 0, 0},
	} {
		if a, d := alter(tc.group, "s", 0, 1).ErrorCode, del(tc.group).ErrorCode; a != tc.alterW || d != tc.deleteW {
			t.Errorf("%s: alter %d delete %d, want %d and %d", tc.group, a, d, tc.alterW, tc.deleteW)
		}
	}
}

// memberBackend knows the share groups' membership.
type memberBackend struct {
	*shareBackend
	members map[string]bool
}

func (b *memberBackend) ShareMemberKnown(_ context.Context, _, member string) (bool, error) {
	return b.members[member], nil
}

// TestShareMembersAreChecked: with the membership known (ShareMembers), a
// member the group does not have is UNKNOWN_MEMBER_ID.
func TestShareMembersAreChecked(t *testing.T) {
	var id [16]byte
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend {
		ab := &authzBackend{fakeBackend: fb, allowed: func(acl.Request) bool { return true }}
		cfg := sharepart.ManagerConfig{Partition: sharepart.Config{LockDurationMs: 30000, DeliveryLimit: 2, MaxLocks: 100}, Now: time.Now}
		store := &memShareStore{m: map[sharepart.Key]sharepart.Snapshot{}}
		sb := &shareBackend{authzBackend: ab, mgr: sharepart.NewManager(cfg, store), sessions: sharepart.NewSessions(2), store: store}
		return &memberBackend{shareBackend: sb, members: map[string]bool{"in": true}}
	})
	h.fb.addTopic("s", 1)
	c := h.dial()
	if r := c.roundTrip(shareFetchReq("out", 0, id, nil)).(*kmsg.ShareFetchResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("a stranger: %d", r.ErrorCode)
	}
	if r := c.roundTrip(shareFetchReq("in", 0, id, nil)).(*kmsg.ShareFetchResponse); r.ErrorCode != 0 {
		t.Fatalf("a member: %d", r.ErrorCode)
	}
}

func (b *shareBackend) ShareCoordinatorNode(_ context.Context, key string) (int32, error) {
	b.askedShareKey = key
	return 1, nil
}

// TestFindShareCoordinator: FindCoordinator key type 2 names the share
// coordinator of a "group:topicId:partition" key from v6, with
// CLUSTER_ACTION, as Kafka answers it; INVALID_REQUEST below v6 or for a
// key of another form.
func TestFindShareCoordinator(t *testing.T) {
	var denyCluster atomic.Bool
	h, _ := startShareServer(t, func(r acl.Request) bool { return denyCluster.Load() && r.Resource == acl.ResourceCluster })
	c := h.dial()
	find := func(v int16, key string) kmsg.FindCoordinatorResponseCoordinator {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = v, coordinatorKeyShare, []string{key}
		return c.roundTrip(req).(*kmsg.FindCoordinatorResponse).Coordinators[0]
	}
	const key = "my:group:AAAAAAAAAAAAAAAAAAAAAA:3"
	if got := find(6, key); got.ErrorCode != 0 || got.NodeID != 1 || got.Port != h.fb.broker.Port ||
		h.srv.backend.(*shareBackend).askedShareKey != key {
		t.Fatalf("v6 %s: %+v", key, got)
	}
	for _, tc := range []struct {
		v    int16
		key  string
		deny bool
		want int16
	}{
		{5, key, false, kerr.InvalidRequest.Code},
		{6, "g", false, kerr.InvalidRequest.Code},
		{6, ":AAAA:1", false, kerr.InvalidRequest.Code},
		{6, "g:AAAA:x", false, kerr.InvalidRequest.Code},
		{6, "g::1", false, kerr.InvalidRequest.Code},
		{6, key, true, kerr.ClusterAuthorizationFailed.Code},
	} {
		denyCluster.Store(tc.deny)
		if got := find(tc.v, tc.key); got.ErrorCode != tc.want || got.NodeID != -1 {
			t.Errorf("v%d %q deny %v: %+v, want error %d", tc.v, tc.key, tc.deny, got, tc.want)
		}
	}
}
