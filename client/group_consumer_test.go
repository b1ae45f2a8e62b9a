package client

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// These tests run KIP-848 members (GroupProtocolConsumer) against kfake,
// which serves ConsumerGroupHeartbeat as Kafka does; cluster_*_test.go
// runs them against our broker.

// newKIP848Kfake starts a one-broker kfake with a short KIP-848
// heartbeat interval, and the session timeout given (0: kfake's).
func newKIP848Kfake(t testing.TB, session time.Duration, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	cfg := map[string]string{"group.consumer.heartbeat.interval.ms": "50"}
	if session > 0 {
		cfg["group.consumer.session.timeout.ms"] = strconv.Itoa(int(session / time.Millisecond))
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...), kfake.BrokerConfigs(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// consumerOpts are groupOpts for a KIP-848 member.
func consumerOpts(kc *kfake.Cluster, group, topic string, extra ...Opt) []Opt {
	return groupOpts(kc, group, topic, append([]Opt{GroupProtocol(GroupProtocolConsumer)}, extra...)...)
}

// memberEpoch is the member's KIP-848 epoch (-1 without one).
func memberEpoch(g *GroupConsumer) int32 {
	_, e := g.Member()
	return e
}

func TestGroupConsumerProtocolSplitTopic(t *testing.T) {
	for _, assignor := range []string{"", UniformAssignor, RangeAssignor} {
		t.Run("assignor="+assignor, func(t *testing.T) {
			kc := newKIP848Kfake(t, 0, 4, "t")
			produceEach(t, kc, "t", 4, 0, 5)
			var extra []Opt
			if assignor != "" {
				extra = append(extra, GroupRemoteAssignor(assignor))
			}
			a := startMember(t, consumerOpts(kc, "g", "t", extra...)...)
			checkFor(t, "the first member to own every partition", func() bool { return assignedCount(a.g) == 4 })
			b := startMember(t, consumerOpts(kc, "g", "t", extra...)...)
			checkFor(t, "a 2/2 split", func() bool { return assignedCount(a.g) == 2 && assignedCount(b.g) == 2 })
			checkFor(t, "every record read", func() bool { return distinct(a, b) == 20 })
			if memberEpoch(a.g) <= 0 || memberEpoch(b.g) <= 0 {
				t.Fatalf("member epochs %d, %d: want positive", memberEpoch(a.g), memberEpoch(b.g))
			}
			ag, bg := a.g.Assigned()["t"], b.g.Assigned()["t"]
			if all := slices.Sorted(slices.Values(append(slices.Clone(ag), bg...))); !slices.Equal(all, []int32{0, 1, 2, 3}) {
				t.Fatalf("assignments %v and %v do not split the topic", ag, bg)
			}
			if err := errors.Join(a.pollErr(), b.pollErr()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// distinct counts the distinct records (by value) the members read.
func distinct(ms ...*member) int {
	seen := map[string]bool{}
	for _, m := range ms {
		for _, r := range m.records() {
			seen[string(r.Value)] = true
		}
	}
	return len(seen)
}

// TestGroupConsumerProtocolRevokeFirst: when a second member joins, the
// first gives up partitions before the second gets them, and commits
// them first (auto-commit), so the second starts where the first
// stopped: no record is read twice.
func TestGroupConsumerProtocolRevokeFirst(t *testing.T) {
	kc := newKIP848Kfake(t, 0, 4, "t")
	produceEach(t, kc, "t", 4, 0, 10)
	var mu sync.Mutex // guards events
	var events []string
	note := func(who, what string) PartitionsCallback {
		return func(_ context.Context, parts map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range parts["t"] {
				events = append(events, who+" "+what+" "+string(rune('0'+p)))
			}
		}
	}
	a := startMember(t, consumerOpts(kc, "g", "t", OnRevoked(note("a", "revoked")), OnAssigned(note("a", "assigned")))...)
	checkFor(t, "a to read everything", func() bool { return a.count() == 40 })
	b := startMember(t, consumerOpts(kc, "g", "t", OnAssigned(note("b", "assigned")))...)
	checkFor(t, "a 2/2 split", func() bool { return assignedCount(a.g) == 2 && assignedCount(b.g) == 2 })
	produceEach(t, kc, "t", 4, 10, 5)
	checkFor(t, "every record read", func() bool { return distinct(a, b) == 60 })
	if n := a.count() + b.count(); n != 60 {
		t.Errorf("%d records read for 60: a revoked partition was read again", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range b.g.Assigned()["t"] {
		rev := slices.Index(events, "a revoked "+string(rune('0'+p)))
		got := slices.Index(events, "b assigned "+string(rune('0'+p)))
		if rev < 0 || got < rev {
			t.Errorf("partition %d: a revoked it at event %d, b got it at %d: %v", p, rev, got, events)
		}
	}
}

// TestGroupConsumerProtocolResumeAfterCommit: a member that closes
// commits what it read (with member epochs, OffsetCommit v9) and leaves
// (epoch -1); a later member resumes there.
func TestGroupConsumerProtocolResumeAfterCommit(t *testing.T) {
	kc := newKIP848Kfake(t, 0, 2, "t")
	produceEach(t, kc, "t", 2, 0, 5)
	var versions []int16
	var mu sync.Mutex // guards versions
	kc.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		mu.Lock()
		versions = append(versions, r.GetVersion())
		mu.Unlock()
		return nil, nil, false
	})
	a := startMember(t, consumerOpts(kc, "g", "t")...)
	checkFor(t, "a to read everything", func() bool { return a.count() == 10 })
	a.close(t)
	c := committedOf(t, kc, "g")
	if c[tp{"t", 0}].offset != 5 || c[tp{"t", 1}].offset != 5 {
		t.Fatalf("committed %v after close, want 5 on both partitions", c)
	}
	mu.Lock()
	if len(versions) == 0 || slices.Min(versions) < 9 {
		t.Errorf("OffsetCommit versions %v: want v9", versions)
	}
	mu.Unlock()
	produceEach(t, kc, "t", 2, 5, 3)
	b := startMember(t, consumerOpts(kc, "g", "t")...)
	checkFor(t, "b to read the new records", func() bool { return b.count() == 6 })
	for _, r := range b.records() {
		if r.Offset < 5 {
			t.Fatalf("b read offset %d of partition %d, committed before it joined", r.Offset, r.Partition)
		}
	}
}

// TestGroupConsumerProtocolCloseLeaves: Close sends the leaving heartbeat
// (epoch -1), so the remaining member gets every partition at once.
func TestGroupConsumerProtocolCloseLeaves(t *testing.T) {
	kc := newKIP848Kfake(t, 0, 4, "t")
	var mu sync.Mutex // guards leaves
	var leaves []int32
	kc.ControlKey(int16(kmsg.ConsumerGroupHeartbeat), func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		if e := r.(*kmsg.ConsumerGroupHeartbeatRequest).MemberEpoch; e < 0 {
			mu.Lock()
			leaves = append(leaves, e)
			mu.Unlock()
		}
		return nil, nil, false
	})
	a := startMember(t, consumerOpts(kc, "g", "t")...)
	b := startMember(t, consumerOpts(kc, "g", "t")...)
	checkFor(t, "a 2/2 split", func() bool { return assignedCount(a.g) == 2 && assignedCount(b.g) == 2 })
	a.close(t)
	checkFor(t, "b to own every partition", func() bool { return assignedCount(b.g) == 4 })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(leaves, []int32{epochLeave}) {
		t.Fatalf("leaving heartbeats with epochs %v, want one with -1", leaves)
	}
}

// TestGroupConsumerProtocolFenced: FENCED_MEMBER_EPOCH loses the
// partitions (OnLost, no commit) and rejoins with epoch 0 under the same
// member id; UNKNOWN_MEMBER_ID rejoins under a new id.
func TestGroupConsumerProtocolFenced(t *testing.T) {
	for _, c := range []struct {
		code  int16
		newID bool
	}{{kerr.FencedMemberEpoch.Code, false}, {kerr.UnknownMemberID.Code, true}} {
		t.Run(kerr.ErrorForCode(c.code).Error(), func(t *testing.T) {
			// The coordinator drops the member the test pretends is
			// unknown after a short session, so that its partitions go
			// to the rejoined one.
			kc := newKIP848Kfake(t, time.Second, 2, "t")
			lost := make(chan map[string][]int32, 4)
			a := startMember(t, consumerOpts(kc, "g", "t", OnLost(func(_ context.Context, p map[string][]int32) { lost <- p }))...)
			checkFor(t, "a to own both partitions", func() bool { return assignedCount(a.g) == 2 })
			before, _ := a.g.Member()
			var mu sync.Mutex // guards joins
			var joins []*kmsg.ConsumerGroupHeartbeatRequest
			kc.ControlKey(int16(kmsg.ConsumerGroupHeartbeat), func(r kmsg.Request) (kmsg.Response, error, bool) {
				kc.KeepControl()
				req := r.(*kmsg.ConsumerGroupHeartbeatRequest)
				mu.Lock()
				defer mu.Unlock()
				if req.MemberEpoch == epochJoin {
					joins = append(joins, req)
				}
				return nil, nil, false
			})
			kc.ControlKey(int16(kmsg.ConsumerGroupHeartbeat), func(r kmsg.Request) (kmsg.Response, error, bool) {
				resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
				resp.ErrorCode = c.code
				return resp, nil, true
			})
			select {
			case p := <-lost:
				if len(p["t"]) != 2 {
					t.Fatalf("lost %v, want both partitions", p)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no OnLost after the injected error")
			}
			checkFor(t, "a to own both partitions again", func() bool { return assignedCount(a.g) == 2 && memberEpoch(a.g) > 0 })
			mu.Lock()
			defer mu.Unlock()
			if len(joins) == 0 {
				t.Fatal("no rejoin with epoch 0")
			}
			if same := joins[0].MemberID == before; same == c.newID {
				t.Fatalf("rejoined as %q after %q: want a new id %v", joins[0].MemberID, before, c.newID)
			}
			if len(joins[0].Topics) != 0 {
				t.Fatalf("rejoin reported owned partitions %v", joins[0].Topics)
			}
		})
	}
}

func TestGroupConsumerProtocolOptions(t *testing.T) {
	base := []Opt{Brokers("127.0.0.1:1"), ConsumerGroup("g"), ConsumeTopics("t")}
	for _, c := range []struct {
		name string
		opts []Opt
		bad  string
	}{
		{"assignor without consumer protocol", []Opt{GroupRemoteAssignor("uniform")}, "GroupRemoteAssignor"},
		{"strategies with consumer protocol", []Opt{GroupProtocol(GroupProtocolConsumer), GroupStrategies(RangeAssign)}, "GroupStrategies"},
		{"unknown protocol", []Opt{GroupProtocol(7)}, "GroupProtocol"},
	} {
		_, err := NewGroupConsumer(append(slices.Clone(base), c.opts...)...)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Option != c.bad {
			t.Errorf("%s: got %v, want a ConfigError on %s", c.name, err, c.bad)
		}
	}
	for _, name := range []string{"classic", "CONSUMER"} {
		if _, err := ParseGroupProtocol(name); err != nil {
			t.Errorf("ParseGroupProtocol(%q): %v", name, err)
		}
	}
	if _, err := ParseGroupProtocol("eager"); err == nil {
		t.Error("ParseGroupProtocol(eager) accepted")
	}
}

// TestAdminConsumerGroup: ListGroups types a KIP-848 group "consumer" and
// a classic one "classic"; DescribeGroup describes the first with
// ConsumerGroupDescribe (epochs, assignor, members with their epochs and
// partitions by topic name) and GroupOffsets names the member owning
// each partition.
func TestAdminConsumerGroup(t *testing.T) {
	kc := newKIP848Kfake(t, 0, 4, "t")
	produceEach(t, kc, "t", 4, 0, 2)
	a := startMember(t, consumerOpts(kc, "g", "t", GroupRemoteAssignor(RangeAssignor))...)
	b := startMember(t, consumerOpts(kc, "g", "t", GroupRemoteAssignor(RangeAssignor))...)
	c := startMember(t, groupOpts(kc, "old", "t")...)
	checkFor(t, "a 2/2 split and a classic member", func() bool {
		return assignedCount(a.g) == 2 && assignedCount(b.g) == 2 && assignedCount(c.g) == 4
	})
	// A member may commit a partition at 0 before it is revoked; wait until
	// every partition's commit covers its two records.
	checkFor(t, "commits at 2", func() bool {
		got := committedOf(t, kc, "g")
		for _, c := range got {
			if c.offset != 2 {
				return false
			}
		}
		return len(got) == 4
	})
	adm, err := NewAdmin(Brokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ls, err := adm.ListGroups(timeoutCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, l := range ls {
		types[l.Group] = l.Type
	}
	if types["g"] != "consumer" || types["old"] != "classic" {
		t.Fatalf("group types %v", types)
	}
	var d *GroupDetail
	checkFor(t, "a stable description", func() bool {
		d, err = adm.DescribeGroup(timeoutCtx(t), "g")
		return err == nil && d.State == "Stable" && len(d.Members) == 2
	})
	if d.Type != "consumer" || d.GroupEpoch <= 0 || d.AssignmentEpoch != d.GroupEpoch || d.Assignor != "range" {
		t.Fatalf("described %+v", d)
	}
	var all []int32
	for _, m := range d.Members {
		if m.MemberEpoch <= 0 || len(m.Assignment["t"]) != 2 || !slices.Equal(m.Assignment["t"], m.Target["t"]) || !slices.Equal(m.Topics, []string{"t"}) {
			t.Fatalf("member %+v", m)
		}
		all = append(all, m.Assignment["t"]...)
	}
	if slices.Sort(all); !slices.Equal(all, []int32{0, 1, 2, 3}) {
		t.Fatalf("members own %v", all)
	}
	offs, err := adm.GroupOffsets(timeoutCtx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs {
		if o.MemberID == "" || o.Committed != 2 {
			t.Fatalf("offset row %+v", o)
		}
	}
	if cd, err := adm.DescribeGroup(timeoutCtx(t), "old"); err != nil || cd.Type != "classic" || len(cd.Members) != 1 {
		t.Fatalf("classic group: %+v, %v", cd, err)
	}
}

// TestGroupConsumerProtocolUnsupported: a broker without
// ConsumerGroupHeartbeat (Kafka before 3.7) ends a KIP-848 member for
// good: Poll fails with a *GroupError wrapping ErrUnsupported.
func TestGroupConsumerProtocolUnsupported(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	g, err := NewGroupConsumer(consumerOpts(kc, "g", "t")...)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	_, err = g.Poll(timeoutCtx(t))
	var ge *GroupError
	if !errors.As(err, &ge) || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Poll: %v, want a *GroupError wrapping ErrUnsupported", err)
	}
}

// TestGroupConsumerProtocolBrokerInterval: a KIP-848 member heartbeats at
// the interval the coordinator gives (50ms here), not at its own
// HeartbeatInterval (45s): the first member learns within checkFor's bound
// that it must give partitions to the second.
func TestGroupConsumerProtocolBrokerInterval(t *testing.T) {
	kc := newKIP848Kfake(t, 0, 4, "t")
	slow := []Opt{SessionTimeout(time.Minute), HeartbeatInterval(45 * time.Second)}
	a := startMember(t, consumerOpts(kc, "g", "t", slow...)...)
	checkFor(t, "a to own every partition", func() bool { return assignedCount(a.g) == 4 })
	b := startMember(t, consumerOpts(kc, "g", "t", slow...)...)
	checkFor(t, "a 2/2 split", func() bool { return assignedCount(a.g) == 2 && assignedCount(b.g) == 2 })
}

// TestGroupConsumerProtocolStaticLeave: a static KIP-848 member
// (GroupInstanceID) leaves with epoch -2 on Close, keeping its place, and
// a new member with the same instance id takes its partitions back.
func TestGroupConsumerProtocolStaticLeave(t *testing.T) {
	kc := newKIP848Kfake(t, 0, 2, "t")
	var mu sync.Mutex // guards leaves
	var leaves []int32
	kc.ControlKey(int16(kmsg.ConsumerGroupHeartbeat), func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		if e := r.(*kmsg.ConsumerGroupHeartbeatRequest).MemberEpoch; e < 0 {
			mu.Lock()
			leaves = append(leaves, e)
			mu.Unlock()
		}
		return nil, nil, false
	})
	a := startMember(t, consumerOpts(kc, "g", "t", GroupInstanceID("i1"))...)
	checkFor(t, "a to own both partitions", func() bool { return assignedCount(a.g) == 2 })
	a.close(t)
	mu.Lock()
	got := slices.Clone(leaves)
	mu.Unlock()
	if !slices.Equal(got, []int32{epochStaticLeave}) {
		t.Fatalf("leaving heartbeats with epochs %v, want one with -2", got)
	}
	b := startMember(t, consumerOpts(kc, "g", "t", GroupInstanceID("i1"))...)
	checkFor(t, "the same instance to own both partitions again", func() bool { return assignedCount(b.g) == 2 })
}
