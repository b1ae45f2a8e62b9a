package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// These tests run GroupConsumers against franz-go's kfake, which
// implements the classic group protocol and the offset APIs, over real
// TCP and real time. They wait for outcomes (checkFor), never for
// durations.

// newGroupKfake starts a one-broker kfake that accepts short sessions.
func newGroupKfake(t testing.TB, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// produceEach produces n records to every partition of topic, valued
// "p<partition>-<i>", and returns when all are acknowledged.
func produceEach(t testing.TB, kc *kfake.Cluster, topic string, partitions int32, from, n int) {
	t.Helper()
	p, err := NewProducer(Brokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	var recs []*Record
	for part := range partitions {
		for i := from; i < from+n; i++ {
			recs = append(recs, &Record{Topic: topic, Partition: part, ExplicitPartition: true, Value: fmt.Appendf(nil, "p%d-%d", part, i)})
		}
	}
	if err := p.ProduceSync(timeoutCtx(t), recs...); err != nil {
		t.Fatal(err)
	}
}

// groupOpts are quick options for a member of group on kc reading topic.
func groupOpts(kc *kfake.Cluster, group, topic string, extra ...Opt) []Opt {
	return append([]Opt{
		Brokers(kc.ListenAddrs()...), ConsumerGroup(group), ConsumeTopics(topic),
		HeartbeatInterval(50 * time.Millisecond), SessionTimeout(30 * time.Second), RebalanceTimeout(10 * time.Second),
		FetchMaxWait(50 * time.Millisecond), RetryBackoff(10*time.Millisecond, 100*time.Millisecond),
	}, extra...)
}

// member is a GroupConsumer whose Poll loop runs on a goroutine of the
// test, collecting what Poll returns.
type member struct {
	g      *GroupConsumer
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex // guards recs and err
	recs []*Record
	err  error // the first error other than the loop's end
}

func startMember(t *testing.T, opts ...Opt) *member {
	t.Helper()
	g, err := NewGroupConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{g: g, cancel: cancel, done: make(chan struct{})}
	go m.loop(ctx)
	t.Cleanup(func() { m.close(t) })
	return m
}

func (m *member) loop(ctx context.Context) {
	defer close(m.done)
	for ctx.Err() == nil {
		recs, err := m.g.Poll(ctx)
		m.mu.Lock()
		m.recs = append(m.recs, recs...)
		if err != nil && ctx.Err() == nil && m.err == nil {
			m.err = err
		}
		m.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			return
		}
	}
}

// stopPolling ends the Poll loop and waits for it.
func (m *member) stopPolling() {
	m.cancel()
	<-m.done
}

// close stops polling and closes the consumer (again: no-op).
func (m *member) close(t *testing.T) {
	t.Helper()
	m.stopPolling()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.g.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func (m *member) records() []*Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.recs)
}

func (m *member) pollErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

func (m *member) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

// checkFor polls cond until it holds, failing the test if it does not
// within 20s (a bound for a broken test, not a timing assertion).
func checkFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assignedCount is how many partitions a member owns.
func assignedCount(g *GroupConsumer) int {
	n := 0
	for _, ps := range g.Assigned() {
		n += len(ps)
	}
	return n
}

func TestGroupTwoMembersSplitTopic(t *testing.T) {
	for _, s := range []AssignStrategy{RangeAssign, CooperativeStickyAssign} {
		t.Run(s.String(), func(t *testing.T) {
			kc := newGroupKfake(t, 4, "t")
			a := startMember(t, groupOpts(kc, "g", "t", GroupStrategies(s), AutoCommit(false))...)
			b := startMember(t, groupOpts(kc, "g", "t", GroupStrategies(s), AutoCommit(false))...)
			checkFor(t, "a 2/2 split", func() bool { return assignedCount(a.g) == 2 && assignedCount(b.g) == 2 })
			produceEach(t, kc, "t", 4, 0, 5)
			checkFor(t, "20 records", func() bool { return a.count()+b.count() == 20 })
		})
	}
}

// committedOf reads a group's committed offsets from outside the group.
func committedOf(t *testing.T, kc *kfake.Cluster, group string) map[tp]committedOffset {
	t.Helper()
	cfg, err := newConfig(anyOpt, []Opt{Brokers(kc.ListenAddrs()...)})
	if err != nil {
		t.Fatal(err)
	}
	cl := newCluster(cfg)
	defer cl.close()
	out, err := fetchCommitted(timeoutCtx(t), newCoordinator(cl, group), group, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// offsetsByTP indexes records by partition, checking offsets ascend.
func offsetsByTP(t *testing.T, recs []*Record) map[int32][]int64 {
	t.Helper()
	out := map[int32][]int64{}
	for _, r := range recs {
		if os := out[r.Partition]; len(os) > 0 && r.Offset <= os[len(os)-1] {
			t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, os[len(os)-1])
		}
		out[r.Partition] = append(out[r.Partition], r.Offset)
	}
	return out
}

// TestGroupResumeAfterCommit: two members split the topic and commit what
// they read; a third member of the group, started after they closed, reads
// exactly the records after the commits: none again, none skipped.
func TestGroupResumeAfterCommit(t *testing.T) {
	for _, s := range []AssignStrategy{RangeAssign, CooperativeStickyAssign} {
		t.Run(s.String(), func(t *testing.T) {
			kc := newGroupKfake(t, 4, "t")
			opts := groupOpts(kc, "g", "t", GroupStrategies(s), AutoCommit(false))
			a, b := startMember(t, opts...), startMember(t, opts...)
			checkFor(t, "a 2/2 split", func() bool { return assignedCount(a.g) == 2 && assignedCount(b.g) == 2 })
			produceEach(t, kc, "t", 4, 0, 5)
			checkFor(t, "20 records", func() bool { return a.count()+b.count() == 20 })
			for _, m := range []*member{a, b} {
				m.stopPolling()
				if err := m.g.CommitPolled(timeoutCtx(t)); err != nil {
					t.Fatalf("CommitPolled: %v", err)
				}
				if got := offsetsByTP(t, m.records()); len(got) != 2 {
					t.Fatalf("a member read partitions %v, want 2", got)
				}
			}
			epochs := map[int32]int32{}
			for _, r := range append(a.records(), b.records()...) {
				epochs[r.Partition] = r.LeaderEpoch
			}
			c := committedOf(t, kc, "g")
			for p := range int32(4) {
				if got := c[tp{"t", p}]; got.offset != 5 || got.epoch != epochs[p] || got.epoch < 0 {
					t.Fatalf("partition %d committed %+v, want offset 5 epoch %d", p, got, epochs[p])
				}
			}
			a.close(t)
			b.close(t)

			produceEach(t, kc, "t", 4, 5, 5)
			n := startMember(t, opts...)
			checkFor(t, "20 new records", func() bool { return n.count() >= 20 })
			n.stopPolling()
			got := offsetsByTP(t, n.records())
			for p := range int32(4) {
				if want := []int64{5, 6, 7, 8, 9}; !slices.Equal(got[p], want) {
					t.Fatalf("new member read partition %d offsets %v, want %v", p, got[p], want)
				}
			}
		})
	}
}

// TestGroupAutoCommit: with AutoCommit, what Poll returned gets committed
// without a call, while the member keeps polling.
func TestGroupAutoCommit(t *testing.T) {
	kc := newGroupKfake(t, 4, "t")
	a := startMember(t, groupOpts(kc, "g", "t", AutoCommitInterval(20*time.Millisecond))...)
	produceEach(t, kc, "t", 4, 0, 3)
	checkFor(t, "12 records", func() bool { return a.count() == 12 })
	checkFor(t, "offsets committed", func() bool {
		c := committedOf(t, kc, "g")
		for p := range int32(4) {
			if c[tp{"t", p}].offset != 3 {
				return false
			}
		}
		return true
	})
	if err := a.pollErr(); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCloseCommitsAndLeaves: Close commits what Poll returned (with
// AutoCommit) and leaves the group, so that the other member takes every
// partition without waiting for the 30s session timeout to expire.
func TestGroupCloseCommitsAndLeaves(t *testing.T) {
	for _, s := range []AssignStrategy{RangeAssign, CooperativeStickyAssign} {
		t.Run(s.String(), func(t *testing.T) {
			kc := newGroupKfake(t, 4, "t")
			opts := groupOpts(kc, "g", "t", GroupStrategies(s), AutoCommitInterval(time.Hour))
			a, b := startMember(t, opts...), startMember(t, opts...)
			checkFor(t, "a 2/2 split", func() bool { return assignedCount(a.g) == 2 && assignedCount(b.g) == 2 })
			produceEach(t, kc, "t", 4, 0, 2)
			checkFor(t, "8 records", func() bool { return a.count()+b.count() == 8 })
			bParts := b.g.Assigned()["t"]
			b.close(t)
			for _, p := range bParts {
				if got := committedOf(t, kc, "g")[tp{"t", p}]; got.offset != 2 {
					t.Fatalf("partition %d committed %+v after Close, want 2", p, got)
				}
			}
			checkFor(t, "a owning all 4", func() bool { return assignedCount(a.g) == 4 })
			produceEach(t, kc, "t", 4, 2, 1)
			checkFor(t, "12 records", func() bool { return a.count()+b.count() == 12 })
			if got := offsetsByTP(t, a.records()); len(got) != 4 {
				t.Fatalf("a read %v", got)
			}
		})
	}
}

// callbacks records the partitions each callback got, in call order.
type callbacks struct {
	mu     sync.Mutex // guards events
	events []string
}

func (c *callbacks) opts() []Opt {
	rec := func(kind string) PartitionsCallback {
		return func(_ context.Context, parts map[string][]int32) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.events = append(c.events, fmt.Sprintf("%s %v", kind, parts["t"]))
		}
	}
	return []Opt{OnAssigned(rec("assigned")), OnRevoked(rec("revoked")), OnLost(rec("lost"))}
}

func (c *callbacks) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

// TestGroupCallbacks follows one member through a second member's arrival
// and departure. Cooperative: only the moving partitions are revoked and
// assigned. Eager (range): everything is revoked before each rebalance.
func TestGroupCallbacks(t *testing.T) {
	for _, tc := range []struct {
		s      AssignStrategy
		a, b   []string // a's and b's callbacks, in order
		aKeeps string   // a's partitions while b is in
	}{
		{s: CooperativeStickyAssign,
			a:      []string{"assigned [0 1 2 3]", "revoked [2 3]", "assigned [2 3]", "revoked [0 1 2 3]"},
			b:      []string{"assigned [2 3]", "revoked [2 3]"},
			aKeeps: "[0 1]"},
		{s: RangeAssign,
			a: []string{"assigned [0 1 2 3]", "revoked [0 1 2 3]", "assigned [0 1]", "revoked [0 1]",
				"assigned [0 1 2 3]", "revoked [0 1 2 3]"},
			b:      []string{"assigned [2 3]", "revoked [2 3]"},
			aKeeps: "[0 1]"},
	} {
		t.Run(tc.s.String(), func(t *testing.T) {
			kc := newGroupKfake(t, 4, "t")
			var ca, cb callbacks
			// kfake's member ids start with the client id, so a sorts
			// first and takes the first range.
			a := startMember(t, groupOpts(kc, "g", "t", append(ca.opts(), GroupStrategies(tc.s), ClientID("a"))...)...)
			checkFor(t, "a owning all 4", func() bool { return assignedCount(a.g) == 4 })
			b := startMember(t, groupOpts(kc, "g", "t", append(cb.opts(), GroupStrategies(tc.s), ClientID("b"))...)...)
			checkFor(t, "a 2/2 split", func() bool { return assignedCount(a.g) == 2 && assignedCount(b.g) == 2 })
			if got := fmt.Sprint(a.g.Assigned()["t"]); got != tc.aKeeps {
				t.Fatalf("a owns %s, want %s", got, tc.aKeeps)
			}
			b.close(t)
			checkFor(t, "a owning all 4", func() bool { return assignedCount(a.g) == 4 })
			a.close(t)
			if got := ca.get(); !slices.Equal(got, tc.a) {
				t.Errorf("a's callbacks %q, want %q", got, tc.a)
			}
			if got := cb.get(); !slices.Equal(got, tc.b) {
				t.Errorf("b's callbacks %q, want %q", got, tc.b)
			}
		})
	}
}

// TestGroupStaticMemberFenced: a second member with the same
// GroupInstanceID takes the first one's place; the first loses its
// partitions (OnLost) and fails with a GroupError matching
// ErrFencedInstanceID.
func TestGroupStaticMemberFenced(t *testing.T) {
	kc := newGroupKfake(t, 4, "t")
	var ca callbacks
	a := startMember(t, groupOpts(kc, "g", "t", append(ca.opts(), GroupInstanceID("x"))...)...)
	checkFor(t, "a owning all 4", func() bool { return assignedCount(a.g) == 4 })
	b := startMember(t, groupOpts(kc, "g", "t", GroupInstanceID("x"))...)
	checkFor(t, "a fenced", func() bool { return a.pollErr() != nil })
	var ge *GroupError
	if err := a.pollErr(); !errors.As(err, &ge) || !errors.Is(err, ErrFencedInstanceID) || ge.InstanceID != "x" {
		t.Fatalf("a's Poll: %v, want a GroupError for FENCED_INSTANCE_ID", err)
	}
	if _, err := a.g.Poll(timeoutCtx(t)); !errors.Is(err, ErrFencedInstanceID) {
		t.Fatalf("Poll after the fence: %v", err)
	}
	if err := a.g.CommitPolled(timeoutCtx(t)); !errors.Is(err, ErrFencedInstanceID) {
		t.Fatalf("CommitPolled after the fence: %v", err)
	}
	if got, want := ca.get(), []string{"assigned [0 1 2 3]", "lost [0 1 2 3]"}; !slices.Equal(got, want) {
		t.Fatalf("a's callbacks %q, want %q", got, want)
	}
	checkFor(t, "b owning all 4", func() bool { return assignedCount(b.g) == 4 })
	produceEach(t, kc, "t", 4, 0, 1)
	checkFor(t, "b reading", func() bool { return b.count() == 4 })
}

func TestGroupConsumerOptions(t *testing.T) {
	base := []Opt{Brokers("127.0.0.1:1"), ConsumerGroup("g"), ConsumeTopics("t")}
	for _, tc := range []struct {
		opt  string
		opts []Opt
	}{
		{"ConsumerGroup", []Opt{Brokers("127.0.0.1:1"), ConsumeTopics("t")}},
		{"ConsumeTopics", []Opt{Brokers("127.0.0.1:1"), ConsumerGroup("g")}},
		{"ConsumePartitions", append(base, ConsumePartitions(map[string]map[int32]Offset{"t": {0: AtStart()}}))},
		{"ConsumeResetOffset", append(base, ConsumeResetOffset(At(3)))},
		{"GroupStrategies", append(base, GroupStrategies())},
		{"GroupStrategies", append(base, GroupStrategies(RangeAssign, RangeAssign))},
		{"GroupStrategies", append(base, GroupStrategies(AssignStrategy(9)))},
		{"SessionTimeout", append(base, SessionTimeout(0))},
		{"HeartbeatInterval", append(base, SessionTimeout(time.Second), HeartbeatInterval(time.Second))},
		{"AutoCommitInterval", append(base, AutoCommitInterval(0))},
		{"Linger", append(base, Linger(time.Millisecond))}, // a producer option
	} {
		_, err := NewGroupConsumer(tc.opts...)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Option != tc.opt || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewGroupConsumer with bad %s: %v", tc.opt, err)
		}
	}
	// Group options are refused by the other clients.
	if _, err := NewConsumer(Brokers("127.0.0.1:1"), ConsumeTopics("t"), ConsumerGroup("g")); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewConsumer with ConsumerGroup: %v", err)
	}
	if _, err := NewAdmin(Brokers("127.0.0.1:1"), AutoCommit(false)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewAdmin with AutoCommit: %v", err)
	}
	// AutoCommit(false) makes the interval irrelevant.
	g, err := NewGroupConsumer(append(base, AutoCommit(false), AutoCommitInterval(0))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Poll(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Poll after Close: %v", err)
	}
	if err := g.CommitPolled(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("CommitPolled after Close: %v", err)
	}
}

// TestGroupRebalanceUnderAutoCommit: members join and leave while records
// are being read, with AutoCommit. No record is skipped (the members
// together read every offset), and after they close the group's committed
// offsets are the log ends: a new member reads nothing old.
func TestGroupRebalanceUnderAutoCommit(t *testing.T) {
	for _, s := range []AssignStrategy{RangeAssign, CooperativeStickyAssign} {
		t.Run(s.String(), func(t *testing.T) {
			kc := newGroupKfake(t, 4, "t")
			opts := groupOpts(kc, "g", "t", GroupStrategies(s), AutoCommitInterval(10*time.Millisecond), FetchMaxBytes(1<<10, 1<<10))
			produceEach(t, kc, "t", 4, 0, 100)
			a := startMember(t, opts...)
			checkFor(t, "a reading", func() bool { return a.count() > 0 })
			b := startMember(t, opts...)
			c := startMember(t, opts...)
			checkFor(t, "b owning partitions", func() bool { return assignedCount(b.g) > 0 })
			c.close(t)
			produceEach(t, kc, "t", 4, 100, 50)
			seen := func() map[[2]int64]bool {
				out := map[[2]int64]bool{}
				for _, m := range []*member{a, b, c} {
					for _, r := range m.records() {
						out[[2]int64{int64(r.Partition), r.Offset}] = true
					}
				}
				return out
			}
			checkFor(t, "every record read", func() bool { return len(seen()) == 600 })
			a.close(t)
			b.close(t)
			for p := range int32(4) {
				if got := committedOf(t, kc, "g")[tp{"t", p}]; got.offset != 150 {
					t.Fatalf("partition %d committed %+v after Close, want 150", p, got)
				}
			}
		})
	}
}
