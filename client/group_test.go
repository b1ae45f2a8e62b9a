package client

import (
	"context"
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
