package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// fastConsumerGroups shortens the KIP-848 session and heartbeat so that
// a test sees members come and go quickly.
func fastConsumerGroups(cfg *broker.Config) {
	cfg.GroupConsumer = groupcoord.ConsumerConfig{
		SessionTimeout: 30 * time.Second, MinSessionTimeout: time.Second,
		HeartbeatInterval: 200 * time.Millisecond, MinHeartbeatInterval: 100 * time.Millisecond,
	}
}

// serverSide makes a kgo group member use the KIP-848 protocol with the
// broker's uniform assignor.
var serverSide = []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer())}

// describe848 describes a consumer group with ConsumerGroupDescribe.
func describe848(t *testing.T, adm *kadm.Client, group string) kadm.DescribedConsumerGroup {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ds kadm.DescribedConsumerGroups
	whileRetriable(ctx, t, "describe "+group, func() (err error) {
		ds, err = adm.DescribeConsumerGroups(ctx, group)
		return err
	})
	return ds[group]
}

// Two kgo members with kgo.ServerSideBalancer split a 4-partition topic
// 2/2 through our KIP-848 coordinator, consume and commit; the
// coordinator's node is halted mid-group and the members carry on, with
// the same member ids, and no commit is lost; after they close, a new
// member resumes after the commits.
func TestConsumerGroup848SplitsFailsOverAndResumes(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, fastConsumerGroups)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "k4", 4, 3)

	a, b := joinGroup(t, c, "k", "k4", serverSide...), joinGroup(t, c, "k", "k4", serverSide...)
	eventually(t, 60*time.Second, "the members split the partitions 2/2", func() bool {
		a.pollRetry(t)
		b.pollRetry(t)
		oa, ob := a.owned(), b.owned()
		for p := range oa {
			if ob[p] {
				return false
			}
		}
		return len(oa) == 2 && len(ob) == 2
	})
	var before kadm.DescribedConsumerGroup
	eventually(t, 30*time.Second, "ConsumerGroupDescribe shows a stable group of two with 2 partitions each", func() bool {
		before = describe848(t, adm, "k")
		if before.Err != nil || before.State != "Stable" || len(before.Members) != 2 || before.AssignorName != "uniform" {
			return false
		}
		for _, m := range before.Members {
			if len(m.Assignment["k4"]) != 2 || len(m.TargetAssignment["k4"]) != 2 {
				return false
			}
		}
		return true
	})
	consumeSplit(t, a, b, func() { produceSpread(t, cl, "k4", 4, 25, "first") }, 100)
	checkCommitted(t, adm, "k", "k4", 4, 25)

	coord := groupCoordinator(t, adm, "k")
	c.HaltNode(int(coord))
	consumeSplit(t, a, b, func() {
		eventually(t, 60*time.Second, "produce after the halt", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var recs []*kgo.Record
			for p := range int32(4) {
				for i := range 5 {
					recs = append(recs, &kgo.Record{Topic: "k4", Partition: p, Value: fmt.Appendf(nil, "mid-%d-%d", p, i)})
				}
			}
			return cl.ProduceSync(ctx, recs...).FirstErr() == nil
		})
	}, 20)
	var after kadm.DescribedConsumerGroup
	eventually(t, 30*time.Second, "the new coordinator describes the group", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ds, err := adm.DescribeConsumerGroups(ctx, "k")
		if err != nil || ds["k"].Err != nil {
			cl.ForceMetadataRefresh() // kadm keeps the dead coordinator until metadata drops it
			return false
		}
		after = ds["k"]
		return true
	})
	if !slices.Equal(memberIDs(before), memberIDs(after)) || after.Epoch != before.Epoch {
		t.Fatalf("after the failover the members are %v in group epoch %d, want the same members %v in epoch %d (no member left or rejoined)",
			memberIDs(after), after.Epoch, memberIDs(before), before.Epoch)
	}
	a.cl.Close()
	b.cl.Close()
	checkCommitted(t, adm, "k", "k4", 4, 30)
	eventually(t, 30*time.Second, "the live replicas' views of the group are byte-identical", func() bool {
		var first []byte
		nodes := c.Running()
		for i, nd := range nodes {
			snap, ok := nd.GroupViewSnapshot("k")
			if !ok || (i > 0 && !bytes.Equal(snap, first)) {
				return false
			}
			first = snap
		}
		return len(nodes) == 2
	})

	produceSpread(t, cl, "k4", 4, 5, "second")
	n := joinGroup(t, c, "k", "k4", serverSide...)
	got := 0
	eventually(t, 60*time.Second, "the new member reads the 20 new records", func() bool {
		k, _ := n.pollRetry(t)
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

// consumeSplit runs produce, then polls a and b (committing) until they
// got want records between them, and checks no partition went to both.
func consumeSplit(t *testing.T, a, b *groupMember, produce func(), want int) {
	t.Helper()
	produce()
	total, from := 0, map[*groupMember]map[int32]bool{a: {}, b: {}}
	eventually(t, 90*time.Second, fmt.Sprintf("both members consume, %d records in all", want), func() bool {
		for _, m := range []*groupMember{a, b} {
			n, parts := m.pollRetry(t)
			total += n
			for p := range parts {
				from[m][p] = true
			}
		}
		return total >= want
	})
	if total != want {
		t.Fatalf("polled %d records, want %d", total, want)
	}
	for p := range from[a] {
		if from[b][p] {
			t.Fatalf("partition %d consumed by both members: %v %v", p, from[a], from[b])
		}
	}
}

func groupCoordinator(t *testing.T, adm *kadm.Client, group string) int32 {
	t.Helper()
	var coord int32 = -1
	eventually(t, 10*time.Second, "coordinator known", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r := adm.FindGroupCoordinators(ctx, group)[group]
		coord = r.NodeID
		return r.Err == nil && coord > 0
	})
	return coord
}

func memberIDs(g kadm.DescribedConsumerGroup) []string {
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.MemberID)
	}
	slices.Sort(ids)
	return ids
}

// pollRetry polls once and commits what it got, retrying the commit
// until it is acknowledged: around a coordinator failover kgo hands the
// application the transient errors to retry, as an application would.
func (m *groupMember) pollRetry(t *testing.T) (int, map[int32]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	recs := m.cl.PollFetches(ctx).Records()
	parts := map[int32]bool{}
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
		eventually(t, 60*time.Second, "the commit is acknowledged", func() bool {
			cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer ccancel()
			if err := m.cl.CommitRecords(cctx, recs...); err != nil {
				m.cl.ForceMetadataRefresh()
				return false
			}
			return true
		})
	}
	return len(recs), parts
}

// A kgo member subscribing by regex through the broker (KIP-848
// SubscribedTopicRegex) is assigned every partition of the matching
// topics, and of a matching topic created later, and none of the others.
func TestConsumerGroup848Regex(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, fastConsumerGroups)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "rx-a", 2, 3)
	createTopic(t, cl, "other", 2, 3)
	m, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...), kgo.ConsumerGroup("rx"),
		kgo.ConsumeRegex(), kgo.ConsumeTopics("^rx-.*"), kgo.MetadataMinAge(100 * time.Millisecond)},
		serverSide...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	adm := kadm.NewClient(cl)
	want := func(what string, topics map[string]int) {
		t.Helper()
		eventually(t, 60*time.Second, what, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			m.PollFetches(ctx) // kgo runs its callbacks between polls
			d := describe848(t, adm, "rx")
			if d.Err != nil || len(d.Members) != 1 {
				return false
			}
			got := d.Members[0].Assignment
			if len(got) != len(topics) {
				return false
			}
			for topic, n := range topics {
				if len(got[topic]) != n {
					return false
				}
			}
			return true
		})
	}
	want("the member holds rx-a's 2 partitions, not other's", map[string]int{"rx-a": 2})
	createTopic(t, cl, "rx-b", 3, 3)
	want("the member holds rx-b's 3 partitions too once it exists", map[string]int{"rx-a": 2, "rx-b": 3})
}

// Online migration with stock clients: a classic kgo member's group is
// upgraded when a KIP-848 kgo member joins (the two split the partitions
// 2/2, the classic one through JoinGroup/SyncGroup inside the consumer
// group), and downgraded again when the KIP-848 member leaves (the
// classic member then takes every partition in a classic rebalance).
func TestConsumerGroup848OnlineMigration(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, fastConsumerGroups)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "mx4", 4, 3)
	a := joinGroup(t, c, "mx", "mx4")
	eventually(t, 60*time.Second, "the classic member holds all 4 partitions", func() bool {
		a.pollRetry(t)
		return len(a.owned()) == 4
	})
	b := joinGroup(t, c, "mx", "mx4", serverSide...)
	eventually(t, 90*time.Second, "the classic and the KIP-848 member split the partitions 2/2", func() bool {
		a.pollRetry(t)
		b.pollRetry(t)
		oa, ob := a.owned(), b.owned()
		for p := range oa {
			if ob[p] {
				return false
			}
		}
		return len(oa) == 2 && len(ob) == 2
	})
	d := describe848(t, adm, "mx")
	if d.Err != nil || len(d.Members) != 2 {
		t.Fatalf("the upgraded group: %+v", d)
	}
	consumeSplit(t, a, b, func() { produceSpread(t, cl, "mx4", 4, 10, "mixed") }, 40)
	b.cl.Close()
	eventually(t, 90*time.Second, "after the downgrade the classic member holds all 4 again", func() bool {
		a.pollRetry(t)
		return len(a.owned()) == 4
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"classic"}
	resp, err := cl.Request(ctx, lg)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range resp.(*kmsg.ListGroupsResponse).Groups {
		found = found || (g.Group == "mx" && g.GroupType == "classic")
	}
	if d := describe848(t, adm, "mx"); !found || !errors.Is(d.Err, kerr.GroupIDNotFound) {
		t.Fatalf("after the KIP-848 member left: listed as classic %v, ConsumerGroupDescribe %v", found, d.Err)
	}
}
