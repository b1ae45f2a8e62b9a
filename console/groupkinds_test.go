package console_test

import (
	"context"
	"errors"
	"slices"
	"strings"
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

// longShareSessions keeps the share member the test joins once (without
// heartbeating after) in its group for the whole test.
func longShareSessions(cfg *broker.Config) {
	cfg.GroupShare = groupcoord.ShareConfig{SessionTimeout: 10 * time.Minute, HeartbeatInterval: time.Second}
}

// modernGroups adds to the known state a KIP-848 consumer group, ledger,
// whose one kgo member (kgo.ServerSideBalancer) reads all of orders and
// commits (lag 0), and a share group, audit, with one member subscribed
// to orders, joined by a raw ShareGroupHeartbeat v1. ledger's member
// stays in the group until the test ends.
func modernGroups(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := c.Client(t, kgo.ConsumerGroup("ledger"), kgo.ConsumeTopics("orders"), kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 5 && ctx.Err() == nil {
		fs := m.PollFetches(ctx)
		got += fs.NumRecords()
	}
	if err := m.CommitUncommittedOffsets(ctx); got != 5 || err != nil {
		t.Fatalf("ledger read %d of orders' 5 records; commit: %v", got, err)
	}

	shareJoin(t, c.Client(t), "audit", "audit-member-1", "orders")
	shareFetchOnce(t, c.Client(t), "audit", "audit-member-1", "orders")
}

// shareFetchOnce opens a share session for member on each leader of
// topic's partitions with a ShareFetch, so that its share partitions
// exist (starting at the log end: share_auto_offset_reset latest).
func shareFetchOnce(t *testing.T, cl *kgo.Client, group, member, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics[topic]
	byLeader := map[int32][]int32{}
	for _, p := range td.Partitions.Sorted() {
		byLeader[p.Leader] = append(byLeader[p.Leader], p.Partition)
	}
	for leader, parts := range byLeader {
		req := kmsg.NewPtrShareFetchRequest()
		req.Version, req.GroupID, req.MemberID, req.MaxWaitMillis, req.MaxBytes, req.MaxRecords = 1, &group, &member, 0, 1<<20, 100
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = td.ID
		for _, p := range parts {
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		r, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err == nil {
			err = kerr.ErrorForCode(r.ErrorCode)
			for _, rt := range r.Topics {
				for _, rp := range rt.Partitions {
					err = errors.Join(err, kerr.ErrorForCode(rp.ErrorCode))
				}
			}
		}
		if err != nil {
			t.Fatalf("%s's share fetch from %d: %v", member, leader, err)
		}
	}
}

// migratingGroup adds group mixed: a classic kgo member, then a KIP-848
// one (kgo.ServerSideBalancer), both reading orders, so that the group is
// a consumer group that still has a classic member (online migration);
// it returns once ConsumerGroupDescribe shows both.
func migratingGroup(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	poll := func(cls ...*kgo.Client) {
		for _, cl := range cls {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			cl.PollFetches(ctx)
			cancel()
		}
	}
	classic := c.Client(t, kgo.ConsumerGroup("mixed"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
	eventually(t, 60*time.Second, "mixed is a stable classic group", func() bool {
		poll(classic)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := adm.DescribeGroups(ctx, "mixed")
		return err == nil && d["mixed"].State == "Stable"
	})
	modern := c.Client(t, kgo.ConsumerGroup("mixed"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit(), kgo.ServerSideBalancer())
	eventually(t, 60*time.Second, "mixed has a classic and a KIP-848 member", func() bool {
		poll(classic, modern)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := adm.DescribeConsumerGroups(ctx, "mixed")
		if err != nil || len(d["mixed"].Members) != 2 {
			return false
		}
		return slices.ContainsFunc(d["mixed"].Members, func(m kadm.ConsumerGroupMember) bool { return m.MemberType == 0 })
	})
}

// migratingGroupShown checks mixed in the list (a consumer group of 2)
// and on its page (one classic and one KIP-848 member).
func migratingGroupShown(t *testing.T, b *browser, base string) {
	t.Helper()
	b.open(base+"groups", "groups")
	names, types, members := b.cells("groups", 0), b.cells("groups", 1), b.cells("groups", 3)
	if i := slices.Index(names, "mixed"); i < 0 || types[i] != "consumer" || members[i] != "2" {
		t.Errorf("groups %v types %v members %v: want mixed a consumer group of 2", names, types, members)
	}
	b.open(base+"group/mixed", "group")
	if got := slices.Sorted(slices.Values(b.cells("members", 3))); !slices.Equal(got, []string{"classic", "consumer"}) {
		t.Errorf("mixed's member protocols %v, want classic and consumer", got)
	}
	b.noErrors("migrating group")
}

// shareJoin joins member to share group with a raw ShareGroupHeartbeat v1
// subscribing to topic, retrying while the coordinator moves or loads.
func shareJoin(t *testing.T, cl *kgo.Client, group, member, topic string) {
	t.Helper()
	eventually(t, 60*time.Second, group+"'s member joined", func() bool {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version, req.GroupID, req.MemberID, req.SubscribedTopicNames = 1, group, member, []string{topic}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(r.ErrorCode)
		}
		if err != nil && !errors.Is(err, kerr.NotCoordinator) && !errors.Is(err, kerr.CoordinatorNotAvailable) &&
			!errors.Is(err, kerr.CoordinatorLoadInProgress) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s heartbeat: %v", group, err)
		}
		return err == nil
	})
}

// groupKindsListed checks the group list: billing classic, ledger
// consumer and audit share, each with the state and members its own
// describe API tells, and no error; and ledger's lag 0.
func groupKindsListed(t *testing.T, b *browser, base string) {
	t.Helper()
	want := map[string]string{"billing": "classic Empty 0", "ledger": "consumer Stable 1", "audit": "share Stable 1"}
	var got map[string]string
	b.openUntil(base+"groups", "groups", func() bool {
		names, types, states, members := b.cells("groups", 0), b.cells("groups", 1), b.cells("groups", 2), b.cells("groups", 3)
		got = map[string]string{}
		for i, n := range names {
			got[n] = types[i] + " " + states[i] + " " + members[i]
		}
		for n, w := range want {
			if got[n] != w {
				return false
			}
		}
		return true
	})
	for n, w := range want {
		if got[n] != w {
			t.Errorf("group list: %s is %q, want %q (all: %v)", n, got[n], w, got)
		}
	}
	names, lags := b.cells("groups", 0), b.cells("groups", 6)
	if i := slices.Index(names, "ledger"); i < 0 || lags[i] != "0" {
		t.Errorf("groups %v with lags %v: want ledger with lag 0", names, lags)
	}
	if bad := b.texts(`[...document.querySelectorAll("#groups td.bad")].map(c => c.innerText)`); len(bad) > 0 {
		t.Errorf("groups with errors: %v", bad)
	}
}

// consumerGroupShown checks ledger's page: its one member, a KIP-848
// member with an epoch holding orders' 3 partitions, and its committed
// offsets 3, 1, 1 with lag 0.
func consumerGroupShown(t *testing.T, b *browser, base string) {
	t.Helper()
	b.openUntil(base+"group/ledger", "group", func() bool {
		return slices.Equal(b.cells("members", 5), []string{"orders-0, orders-1, orders-2"})
	})
	state := b.texts(`[document.getElementById("group-state").innerText]`)[0]
	if !strings.HasPrefix(state, "Type consumer; state Stable;") || !strings.Contains(state, "group epoch") {
		t.Errorf("ledger's state line %q", state)
	}
	types, epochs, assigned := b.cells("members", 3), b.cells("members", 4), b.cells("members", 5)
	if !slices.Equal(types, []string{"consumer"}) || len(epochs) != 1 || epochs[0] == "–" || epochs[0] == "0" ||
		!slices.Equal(assigned, []string{"orders-0, orders-1, orders-2"}) {
		t.Errorf("ledger's members: types %v epochs %v assigned %v", types, epochs, assigned)
	}
	if c, l := b.cells("offsets", 2), b.cells("offsets", 4); !slices.Equal(c, []string{"3", "1", "1"}) || !slices.Equal(l, []string{"0", "0", "0"}) {
		t.Errorf("ledger's offsets: committed %v lag %v, want 3 1 1 and lag 0", c, l)
	}
	b.shot("group-consumer")
	b.noErrors("consumer group")
}

// shareGroupShown checks audit's page: its member with epoch 1 holding
// orders' 3 partitions, and its share partitions' start offsets (orders'
// ends: 3, 1, 1) with lag 0 (everything accepted), without an error.
func shareGroupShown(t *testing.T, b *browser, base string) {
	t.Helper()
	b.open(base+"group/audit", "group")
	state := b.texts(`[document.getElementById("group-state").innerText]`)[0]
	if !strings.HasPrefix(state, "Type share; state Stable; protocol share simple;") {
		t.Errorf("audit's state line %q", state)
	}
	if got := []string{b.cells("members", 0)[0], b.cells("members", 3)[0], b.cells("members", 4)[0], b.cells("members", 5)[0]}; !slices.Equal(got,
		[]string{"audit-member-1", "share", "1", "orders-0, orders-1, orders-2"}) {
		t.Errorf("audit's member: %v", got)
	}
	if c, l := b.cells("offsets", 2), b.cells("offsets", 4); !slices.Equal(c, []string{"3", "1", "1"}) || !slices.Equal(l, []string{"0", "0", "0"}) {
		t.Errorf("audit's offsets: start %v lag %v, want 3 1 1 and lag 0", c, l)
	}
	if n := b.texts(`[String(document.querySelectorAll("#offsets-note, .error").length)]`); n[0] != "0" {
		t.Errorf("audit's page shows %s offsets notes or errors, want none", n[0])
	}
	b.shot("group-share")
	b.noErrors("share group")
}
