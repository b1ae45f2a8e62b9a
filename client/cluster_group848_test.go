package client_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minikafka/minikafka-go/client"
)

// KIP-848 members of our client against our 3-node cluster: the
// coordinator assigns (ConsumerGroupHeartbeat), the members commit under
// their member epochs, a member that closes leaves (epoch -1) and the
// other takes its partitions, and a later member resumes at the commits.

// kip848Member is a GroupConsumer polling on its own goroutine.
type kip848Member struct {
	g      *client.GroupConsumer
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex // guards recs
	recs []*client.Record
}

func startKIP848Member(t *testing.T, seeds []string, group, topic string) *kip848Member {
	t.Helper()
	return startClusterMember(t, seeds, group, topic,
		client.GroupProtocol(client.GroupProtocolConsumer), client.GroupRemoteAssignor(client.UniformAssignor))
}

// startClusterMember starts a group member reading topic from the start,
// with extra options on top.
func startClusterMember(t *testing.T, seeds []string, group, topic string, extra ...client.Opt) *kip848Member {
	t.Helper()
	g, err := client.NewGroupConsumer(append([]client.Opt{client.Brokers(seeds...), client.ConsumerGroup(group),
		client.ConsumeTopics(topic), client.ConsumeResetOffset(client.AtStart()),
		client.AutoCommitInterval(200 * time.Millisecond), client.FetchMaxWait(100 * time.Millisecond)}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &kip848Member{g: g, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			recs, _ := g.Poll(ctx)
			m.mu.Lock()
			m.recs = append(m.recs, recs...)
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() { m.close(t) })
	return m
}

func (m *kip848Member) close(t *testing.T) {
	t.Helper()
	m.cancel()
	<-m.done
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.g.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
}

func (m *kip848Member) values() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, r := range m.recs {
		out = append(out, string(r.Value))
	}
	return out
}

func owns(g *client.GroupConsumer, topic string) int { return len(g.Assigned()[topic]) }

func produceValues(t *testing.T, seeds []string, topic string, partitions int32, phase string, n int) []string {
	t.Helper()
	p, err := client.NewProducer(client.Brokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	var recs []*client.Record
	var vals []string
	for part := range partitions {
		for i := range n {
			v := fmt.Sprintf("%s-%d-%d", phase, part, i)
			vals = append(vals, v)
			recs = append(recs, &client.Record{Topic: topic, Partition: part, ExplicitPartition: true, Value: []byte(v)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.ProduceSync(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	return vals
}

func TestClusterGroupConsumerProtocol(t *testing.T) {
	const topic, group, parts = "k848", "g848", 4
	c := startCluster(t, map[string]int32{topic: parts})
	seeds := c.Seeds()
	a := startKIP848Member(t, seeds, group, topic)
	b := startKIP848Member(t, seeds, group, topic)
	waitFor(t, "a 2/2 split", func() bool { return owns(a.g, topic) == 2 && owns(b.g, topic) == 2 })
	first := produceValues(t, seeds, topic, parts, "first", 5)
	waitFor(t, "every record read once", func() bool { return len(a.values())+len(b.values()) == len(first) })

	adm, err := client.NewAdmin(client.Brokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	var d *client.GroupDetail
	waitFor(t, "the group described as a stable consumer group", func() bool {
		d, err = adm.DescribeGroup(context.Background(), group)
		return err == nil && d.Type == "consumer" && d.State == "Stable" && len(d.Members) == 2
	})
	if d.GroupEpoch <= 0 || d.Assignor != client.UniformAssignor {
		t.Fatalf("described %+v", d)
	}

	// a leaves: b gets every partition, reading on from a's commits.
	a.close(t)
	waitFor(t, "b to own every partition", func() bool { return owns(b.g, topic) == parts })
	second := produceValues(t, seeds, topic, parts, "second", 3)
	waitFor(t, "b to read the second batch", func() bool { return len(a.values())+len(b.values()) == len(first)+len(second) })
	got := slices.Sorted(slices.Values(append(a.values(), b.values()...)))
	if want := slices.Sorted(slices.Values(append(first, second...))); !slices.Equal(got, want) {
		t.Fatalf("read %v, want each record once: %v", got, want)
	}

	// b closes (committing); a later member resumes after the commits.
	b.close(t)
	third := produceValues(t, seeds, topic, parts, "third", 2)
	m := startKIP848Member(t, seeds, group, topic)
	waitFor(t, "the new member to read the third batch", func() bool { return len(m.values()) >= len(third) })
	if got := slices.Sorted(slices.Values(m.values())); !slices.Equal(got, slices.Sorted(slices.Values(third))) {
		t.Fatalf("new member read %v, want exactly %v", got, third)
	}
}

// TestClusterGroupConsumerProtocolCoordinatorHalt: the node coordinating
// a group of two KIP-848 members of our client is halted mid-group; the
// members find the new coordinator and carry on with the same ids and
// partitions (no member is fenced), every record is read, and the
// commits survive: a later member reads exactly what came after them.
func TestClusterGroupConsumerProtocolCoordinatorHalt(t *testing.T) {
	const topic, group, parts = "k848h", "g848h", 4
	c := startCluster(t, map[string]int32{topic: parts})
	seeds := c.Seeds()
	a := startKIP848Member(t, seeds, group, topic)
	b := startKIP848Member(t, seeds, group, topic)
	waitFor(t, "a 2/2 split", func() bool { return owns(a.g, topic) == 2 && owns(b.g, topic) == 2 })
	idA, _ := a.g.Member()
	idB, _ := b.g.Member()
	first := produceValues(t, seeds, topic, parts, "first", 5)
	waitFor(t, "the first batch read", func() bool { return len(a.values())+len(b.values()) == len(first) })

	resp := kadm.NewClient(c.Client(t)).FindGroupCoordinators(context.Background(), group)[group]
	if resp.Err != nil {
		t.Fatal(resp.Err)
	}
	c.HaltNode(int(resp.NodeID))
	second := produceValues(t, seeds, topic, parts, "second", 5)
	want := slices.Sorted(slices.Values(append(slices.Clone(first), second...)))
	waitFor(t, "every record read after the halt", func() bool {
		got := slices.Compact(slices.Sorted(slices.Values(append(a.values(), b.values()...))))
		return slices.Equal(got, want)
	})
	if id, _ := a.g.Member(); id != idA || owns(a.g, topic) != 2 {
		t.Errorf("a is %s with %v after the halt, was %s with 2 partitions", id, a.g.Assigned(), idA)
	}
	if id, _ := b.g.Member(); id != idB || owns(b.g, topic) != 2 {
		t.Errorf("b is %s with %v after the halt, was %s with 2 partitions", id, b.g.Assigned(), idB)
	}
	a.close(t)
	b.close(t)
	third := produceValues(t, seeds, topic, parts, "third", 2)
	m := startKIP848Member(t, seeds, group, topic)
	waitFor(t, "the new member to read the third batch", func() bool { return len(m.values()) >= len(third) })
	if got := slices.Sorted(slices.Values(m.values())); !slices.Equal(got, slices.Sorted(slices.Values(third))) {
		t.Fatalf("new member read %v, want exactly %v", got, third)
	}
}

// TestClusterGroupStaticMemberRestart: a classic static member closes
// without leaving; restarted with the same GroupInstanceID, it takes its
// place and partitions back in the same generation (no rebalance), and
// continues after what it committed. a is alone in generation 1 before b
// joins, so a's last JoinGroup carried generation 1 and the restarted a's
// carries none: Kafka's coordinator compares the selected protocol, not
// the subscription bytes (kfake compares the bytes, so this runs against
// our broker).
func TestClusterGroupStaticMemberRestart(t *testing.T) {
	const topic, group, parts = "static", "gstatic", 4
	c := startCluster(t, map[string]int32{topic: parts})
	seeds := c.Seeds()
	a := startClusterMember(t, seeds, group, topic, client.GroupInstanceID("x"))
	waitFor(t, "a to own every partition", func() bool { return owns(a.g, topic) == parts })
	b := startClusterMember(t, seeds, group, topic, client.GroupInstanceID("y"))
	waitFor(t, "a 2/2 split", func() bool { return owns(a.g, topic) == 2 && owns(b.g, topic) == 2 })
	first := produceValues(t, seeds, topic, parts, "first", 2)
	waitFor(t, "every record read", func() bool { return len(a.values())+len(b.values()) == len(first) })
	aParts := a.g.Assigned()
	_, gen := a.g.Member()
	if gen < 2 {
		t.Fatalf("a's generation %d after b joined, want at least 2", gen)
	}
	a.close(t)

	a2 := startClusterMember(t, seeds, group, topic, client.GroupInstanceID("x"))
	waitFor(t, "a back", func() bool { return owns(a2.g, topic) == 2 })
	if got := a2.g.Assigned(); fmt.Sprint(got) != fmt.Sprint(aParts) {
		t.Fatalf("restarted member owns %v, want %v", got, aParts)
	}
	if _, gen2 := a2.g.Member(); gen2 != gen {
		t.Fatalf("generation %d after the restart, want %d (no rebalance)", gen2, gen)
	}
	if _, genB := b.g.Member(); genB != gen {
		t.Fatalf("b's generation %d, want %d", genB, gen)
	}
	second := produceValues(t, seeds, topic, parts, "second", 1)
	var want []string
	for _, v := range second {
		for _, p := range aParts[topic] {
			if strings.HasPrefix(v, fmt.Sprintf("second-%d-", p)) {
				want = append(want, v)
			}
		}
	}
	waitFor(t, "a2 to read its new records", func() bool { return len(a2.values()) >= len(want) })
	if got := slices.Sorted(slices.Values(a2.values())); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("restarted member read %v, want only %v", got, want)
	}
}
