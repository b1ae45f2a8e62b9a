package broker_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/metadata"
)

// produceSpread produces n records to each of parts partitions of topic,
// valued prefix-p-i.
func produceSpread(t *testing.T, cl *kgo.Client, topic string, parts int32, n int, prefix string) {
	t.Helper()
	var recs []*kgo.Record
	for p := range parts {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s-%d-%d", prefix, p, i)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// groupMember is a kgo group consumer that collects what it polls and
// commits it.
type groupMember struct {
	cl       *kgo.Client
	mu       sync.Mutex      // guards got and assigned
	got      map[string]bool // values polled
	assigned map[int32]bool  // partitions the group gave it now
}

func joinGroup(t *testing.T, c *testcluster.Cluster, group, topic string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{got: map[string]bool{}, assigned: map[int32]bool{}}
	track := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps[topic] {
				if add {
					m.assigned[p] = true
				} else {
					delete(m.assigned, p)
				}
			}
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(track(true)), kgo.OnPartitionsRevoked(track(false)), kgo.OnPartitionsLost(track(false))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	m.cl = cl
	return m
}

// owned returns the partitions m holds now.
func (m *groupMember) owned() map[int32]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.assigned)
}

// poll polls once and commits what it got; it returns the number of
// records polled and the partitions they came from.
func (m *groupMember) poll(t *testing.T) (int, map[int32]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	fs := m.cl.PollFetches(ctx)
	parts := map[int32]bool{}
	recs := fs.Records()
	m.mu.Lock()
	for _, r := range recs {
		if m.got[string(r.Value)] {
			t.Errorf("%s delivered twice to one member", r.Value)
		}
		m.got[string(r.Value)] = true
		parts[r.Partition] = true
	}
	m.mu.Unlock()
	if len(recs) > 0 {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		if err := m.cl.CommitRecords(cctx, recs...); err != nil {
			t.Errorf("commit: %v", err)
		}
	}
	return len(recs), parts
}

// Two kgo members split a topic's partitions through our coordinator,
// commit and leave; a new member of the group resumes exactly after the
// commits: nothing re-delivered, nothing skipped.
func TestGroupSplitsCommitsAndResumes(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "g4", 4, 3)

	a, b := joinGroup(t, c, "g", "g4"), joinGroup(t, c, "g", "g4")
	eventually(t, 60*time.Second, "the members split the partitions", func() bool {
		a.poll(t) // kgo runs rebalance callbacks between polls
		b.poll(t)
		oa, ob := a.owned(), b.owned()
		for p := range oa {
			if ob[p] {
				return false
			}
		}
		return len(oa) > 0 && len(ob) > 0 && len(oa)+len(ob) == 4
	})
	produceSpread(t, cl, "g4", 4, 25, "first")
	total, from := 0, map[*groupMember]map[int32]bool{a: {}, b: {}}
	eventually(t, 60*time.Second, "both members consume, 100 records in all", func() bool {
		for _, m := range []*groupMember{a, b} {
			n, parts := m.poll(t)
			total += n
			for p := range parts {
				from[m][p] = true
			}
		}
		return total >= 100
	})
	if total != 100 {
		t.Fatalf("polled %d records, want 100", total)
	}
	for p := range from[a] {
		if from[b][p] {
			t.Fatalf("partition %d consumed by both members: %v %v", p, from[a], from[b])
		}
	}
	a.cl.Close()
	b.cl.Close()

	adm := kadm.NewClient(cl)
	checkCommitted(t, adm, "g", "g4", 4, 25)
	produceSpread(t, cl, "g4", 4, 5, "second")
	n := joinGroup(t, c, "g", "g4")
	got := 0
	eventually(t, 60*time.Second, "the new member reads the 20 new records", func() bool {
		k, _ := n.poll(t)
		got += k
		return got >= 20
	})
	n.mu.Lock()
	defer n.mu.Unlock()
	for v := range n.got {
		var prefix string
		var p, i int
		if _, err := fmt.Sscanf(v, "%6s-%d-%d", &prefix, &p, &i); err != nil || prefix != "second" {
			t.Fatalf("the new member got %q, committed before", v)
		}
	}
	if got != 20 {
		t.Fatalf("the new member got %d records, want 20", got)
	}
}

func checkCommitted(t *testing.T, adm *kadm.Client, group, topic string, parts int32, want int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offsets, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	for p := range parts {
		o, ok := offsets.Lookup(topic, p)
		if !ok || o.Err != nil || o.At != want {
			t.Fatalf("%s committed %+v on %s/%d (found %v), want %d", group, o, topic, p, ok, want)
		}
	}
}

// The coordinator's node crashes: the partition's new leader knows every
// committed offset and the group's last generation at once, and commits
// go on through it.
func TestCoordinatorFailoverKeepsOffsets(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "f2", 2, 3)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	commit := func(at int64) {
		t.Helper()
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "f2", Partition: 0, At: at, LeaderEpoch: -1})
		os.Add(kadm.Offset{Topic: "f2", Partition: 1, At: at, LeaderEpoch: -1})
		var resp kadm.OffsetResponses
		var err error
		eventually(t, 30*time.Second, "commit accepted", func() bool {
			resp, err = adm.CommitOffsets(ctx, "fo", os)
			return err == nil && resp.Error() == nil
		})
	}
	commit(7)
	checkCommitted(t, adm, "fo", "f2", 2, 7)

	var coord int32 = -1
	eventually(t, 10*time.Second, "coordinator known", func() bool {
		r := adm.FindGroupCoordinators(ctx, "fo")["fo"]
		coord = r.NodeID
		return r.Err == nil && coord > 0
	})
	c.HaltNode(int(coord))
	eventually(t, 30*time.Second, "offsets served by the new coordinator", func() bool {
		offsets, err := adm.FetchOffsets(ctx, "fo")
		if err != nil || offsets.Error() != nil {
			// kgo keeps a batched OffsetFetch's coordinator until its
			// metadata drops the dead node.
			cl.ForceMetadataRefresh()
			return false
		}
		o, ok := offsets.Lookup("f2", 1)
		return ok && o.At == 7
	})
	commit(9)
	checkCommitted(t, adm, "fo", "f2", 2, 9)
}

// __consumer_offsets is the cluster's: listed as internal, closed to
// client produce and to CreateTopics.
func TestConsumerOffsetsIsInternal(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eventually(t, 20*time.Second, "coordinator found (topic created)", func() bool {
		return adm.FindGroupCoordinators(ctx, "x").Ok()
	})
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(metadata.ConsumerOffsetsTopic)}}
	mr := rawRequest(t, c.Seeds()[0], md).(*kmsg.MetadataResponse)
	if len(mr.Topics) != 1 || !mr.Topics[0].IsInternal || len(mr.Topics[0].Partitions) != 4 {
		t.Fatalf("metadata of %s: %+v", metadata.ConsumerOffsetsTopic, mr.Topics)
	}
	r := produceRaw(t, ctx, cl, metadata.ConsumerOffsetsTopic, batchFor(t, -1, -1, 0, "x"), -1)
	if err := kerr.ErrorForCode(r.ErrorCode); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", metadata.ConsumerOffsetsTopic, err)
	}
	resp, err := adm.CreateTopics(ctx, 1, 1, nil, metadata.ConsumerOffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp[metadata.ConsumerOffsetsTopic]; r.Err == nil {
		t.Fatalf("CreateTopics %s succeeded", metadata.ConsumerOffsetsTopic)
	}
}

// Bad group requests over the wire each get Kafka's error code, and the
// group and its committed offsets stay as they were.
func TestGroupBadInputLeavesGroupIntact(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	// Kafka 4.0's versions: the commits below name topics, which
	// OffsetCommit v10 no longer carries (it names them by id).
	cl := c.Client(t, kgo.MaxVersions(kversion.V4_0_0()))
	createTopic(t, cl, "bad", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := func(r kmsg.Request) kmsg.Response {
		t.Helper()
		for {
			resp, err := cl.Request(ctx, r)
			if err != nil {
				t.Fatalf("%T: %v", r, err)
			}
			// The coordinator is still being created or loaded: ask again.
			if jr, ok := resp.(*kmsg.JoinGroupResponse); ok && (jr.ErrorCode == kerr.CoordinatorNotAvailable.Code || jr.ErrorCode == kerr.CoordinatorLoadInProgress.Code) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return resp
		}
	}
	join := func(member string, protocols []kmsg.JoinGroupRequestProtocol) *kmsg.JoinGroupResponse {
		j := kmsg.NewPtrJoinGroupRequest()
		j.Group, j.MemberID, j.ProtocolType, j.Protocols = "bad-g", member, "consumer", protocols
		j.SessionTimeoutMillis, j.RebalanceTimeoutMillis = 10000, 10000
		return req(j).(*kmsg.JoinGroupResponse)
	}
	range1 := []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}

	// A stable group of one member, with a committed offset.
	r := join("", range1)
	if r.ErrorCode == kerr.MemberIDRequired.Code {
		r = join(r.MemberID, range1)
	}
	if r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("join: %+v", r)
	}
	member, gen := r.MemberID, r.Generation
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "bad-g", member, gen
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: []byte{0, 0}}}
	if s := req(sync).(*kmsg.SyncGroupResponse); s.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(s.ErrorCode))
	}
	commit := func(topic string, offset int64, metadata string) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.MemberID, oc.Generation = "bad-g", member, gen
		oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{
			{Partition: 0, Offset: offset, LeaderEpoch: -1, Metadata: &metadata}}}}
		return req(oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit("bad", 5, ""); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	hb := func(member string, gen int32) int16 {
		h := kmsg.NewPtrHeartbeatRequest()
		h.Group, h.MemberID, h.Generation = "bad-g", member, gen
		return req(h).(*kmsg.HeartbeatResponse).ErrorCode
	}
	adm := kadm.NewClient(cl)
	describe := func() string {
		d, err := adm.DescribeGroups(ctx, "bad-g")
		if err != nil {
			t.Fatal(err)
		}
		g := d["bad-g"]
		return fmt.Sprintf("%s %s %d members", g.State, g.Protocol, len(g.Members))
	}
	before := describe()

	huge := []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, 2<<20)}}
	badJoinGroup := kmsg.NewPtrJoinGroupRequest()
	badJoinGroup.Group, badJoinGroup.ProtocolType, badJoinGroup.Protocols = "", "consumer", range1
	badJoinGroup.SessionTimeoutMillis = 10000
	for _, tc := range []struct {
		name string
		got  func() int16
		want *kerr.Error
	}{
		{"join with an unknown member id", func() int16 { return join("nobody", range1).ErrorCode }, kerr.UnknownMemberID},
		{"join with no protocols", func() int16 { return join(member, nil).ErrorCode }, kerr.InconsistentGroupProtocol},
		{"join with megabytes of metadata", func() int16 { return join(member, huge).ErrorCode }, kerr.InvalidRequest},
		{"join with an empty group id", func() int16 { return req(badJoinGroup).(*kmsg.JoinGroupResponse).ErrorCode }, kerr.InvalidGroupID},
		{"heartbeat of a stale generation", func() int16 { return hb(member, gen-1) }, kerr.IllegalGeneration},
		{"heartbeat of an unknown member", func() int16 { return hb("nobody", gen) }, kerr.UnknownMemberID},
		{"commit to an unknown topic", func() int16 { return commit("no-such-topic", 9, "") }, kerr.UnknownTopicOrPartition},
		{"commit with too much metadata", func() int16 { return commit("bad", 9, string(make([]byte, 5000))) }, kerr.OffsetMetadataTooLarge},
	} {
		if got := tc.got(); got != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
		if now := describe(); now != before {
			t.Errorf("after %s the group is %q, was %q", tc.name, now, before)
		}
	}
	checkCommitted(t, adm, "bad-g", "bad", 1, 5)

	// A member that left is unknown to the group.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "bad-g", member
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}}
	if l := req(leave).(*kmsg.LeaveGroupResponse); l.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(l.ErrorCode))
	}
	if code := hb(member, gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of a member that left: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(code))
	}
	checkCommitted(t, adm, "bad-g", "bad", 1, 5)
}
