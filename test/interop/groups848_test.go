package interop

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group suite with KIP-848 (issue 32): franz-go members with
// kgo.ServerSideBalancer, so that the coordinator assigns
// (ConsumerGroupHeartbeat). Two members split a 4-partition topic, commit
// (OffsetCommit v9 with their member epochs) and close; kadm's
// DescribeConsumerGroups shows the group while they hold it, and a later
// member resumes exactly after the commits.
func TestGroupServerSideBalancer(t *testing.T) {
	tg := startTarget(t)
	tg.requireGroupAPIs(t)
	tg.requireKIP848(t)
	topic, group := "groups-kip848", "group-kip848"
	tg.createTopic(t, topic, groupPartitions)
	cl := kgo848Client()

	a := cl.join(t, tg.seeds, group, topic)
	a.name = "a"
	b := cl.join(t, tg.seeds, group, topic)
	b.name = "b"
	var splitA, splitB []int32
	await(t, "two members split the partitions", groupWait, func() error {
		splitA, _, _ = a.log.snapshot()
		splitB, _, _ = b.log.snapshot()
		all := slices.Sorted(slices.Values(append(slices.Clone(splitA), splitB...)))
		if len(splitA) == 0 || len(splitB) == 0 || !slices.Equal(all, []int32{0, 1, 2, 3}) {
			return fmt.Errorf("a holds %v, b holds %v", splitA, splitB)
		}
		return nil
	}, a, b)
	t.Logf("a holds %v, b holds %v", splitA, splitB)
	await(t, "kadm describes the consumer group", groupWait, func() error {
		return describedAs(testContext(t), tg.admin, group, topic, [][]int32{splitA, splitB})
	}, a, b)

	first := batchOf("first", 0, firstPerPart)
	checkProduced(t, first, cl.produce(t, tg.seeds, topic, first))
	await(t, "the members consume the first records", groupWait, func() error {
		return consumedExactly(first, map[*member][]int32{a: splitA, b: splitB})
	}, a, b)
	for _, m := range []*member{a, b} {
		if err := m.commit(testContext(t)); err != nil {
			t.Fatalf("member %s commits: %v", m.name, err)
		}
	}
	checkCommitted(t, tg, group, topic, firstPerPart)
	closeAll(t, a, b)
	if err := consumedExactly(first, map[*member][]int32{a: splitA, b: splitB}); err != nil {
		t.Fatalf("after closing: %v", err)
	}

	second := batchOf("second", firstPerPart, secondPerPart)
	checkProduced(t, second, cl.produce(t, tg.seeds, topic, second))
	c := cl.join(t, tg.seeds, group, topic)
	c.name = "c"
	all := []int32{0, 1, 2, 3}
	await(t, "a new member resumes after the commits", groupWait, func() error {
		return consumedExactly(second, map[*member][]int32{c: all})
	}, c)
	if err := c.commit(testContext(t)); err != nil {
		t.Fatalf("member c commits: %v", err)
	}
	checkCommitted(t, tg, group, topic, firstPerPart+secondPerPart)
	closeAll(t, c)
}

// describedAs checks what kadm reports of a KIP-848 group: listed with
// type consumer, described by ConsumerGroupDescribe as Stable with one
// member per expected assignment, each owning (and targeted with) its
// partitions of topic.
func describedAs(ctx context.Context, adm *kadm.Client, group, topic string, want [][]int32) error {
	listed, err := adm.ListGroupsByType(ctx, []string{"consumer"})
	if err != nil {
		return err
	}
	if _, ok := listed[group]; !ok {
		return fmt.Errorf("ListGroups of type consumer lists %v, not %s", listed.Groups(), group)
	}
	described, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return err
	}
	d := described[group]
	if d.Err != nil || d.State != "Stable" || len(d.Members) != len(want) {
		return fmt.Errorf("group %s: %v, state %s, %d members", group, d.Err, d.State, len(d.Members))
	}
	var got [][]int32
	for _, m := range d.Members {
		owned := m.Assignment.Sorted()
		// Kafka names the topics; a broker may give only their ids.
		if len(owned) != 1 || (owned[0].Topic != topic && owned[0].Topic != "") || m.MemberEpoch <= 0 {
			return fmt.Errorf("member %s (epoch %d) owns %v", m.MemberID, m.MemberEpoch, owned)
		}
		if target := m.TargetAssignment.Sorted(); len(target) != 1 || !slices.Equal(target[0].Partitions, owned[0].Partitions) {
			return fmt.Errorf("member %s owns %v, target %v", m.MemberID, owned, target)
		}
		got = append(got, owned[0].Partitions)
	}
	cmp := func(a, b []int32) int { return slices.Compare(a, b) }
	if !slices.EqualFunc(slices.SortedFunc(slices.Values(got), cmp), slices.SortedFunc(slices.Values(want), cmp), slices.Equal) {
		return fmt.Errorf("%w: kadm says the members own %v, they hold %v", errFatal, got, want)
	}
	return nil
}

// requireKIP848 fails the test at once if the target does not serve
// ConsumerGroupHeartbeat v1 and ConsumerGroupDescribe: franz-go would
// quietly fall back to the classic protocol.
func (tg *target) requireKIP848(t *testing.T) {
	t.Helper()
	versions, err := tg.admin.ApiVersions(testContext(t))
	if err != nil {
		t.Fatalf("ApiVersions on the %s target: %v", tg.name, err)
	}
	for _, v := range versions.Sorted() {
		if _, maxV, ok := v.KeyVersions(kmsg.ConsumerGroupHeartbeat.Int16()); !ok || maxV < 1 {
			t.Fatalf("broker %d of the %s target does not serve ConsumerGroupHeartbeat v1 (KIP-848)", v.NodeID, tg.name)
		}
		if _, _, ok := v.KeyVersions(kmsg.ConsumerGroupDescribe.Int16()); !ok {
			t.Fatalf("broker %d of the %s target does not serve ConsumerGroupDescribe", v.NodeID, tg.name)
		}
	}
}

// kgo848Client is kgoClient with the KIP-848 protocol
// (kgo.ServerSideBalancer over its default cooperative-sticky balancer).
func kgo848Client() groupClient {
	cl := kgoClient()
	cl.name = "franz-go-kip848"
	cl.join = func(t *testing.T, seeds []string, group, topic string) *member {
		t.Helper()
		m := &member{}
		kc, err := kgo.NewClient(
			kgo.SeedBrokers(seeds...),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.ServerSideBalancer(),
			kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(250*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.log.add(ps[topic]) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.log.revoke(ps[topic]) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.log.revoke(ps[topic]) }),
		)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				fetches := kc.PollFetches(ctx)
				if ctx.Err() != nil || fetches.IsClientClosed() {
					return
				}
				fetches.EachError(func(topic string, p int32, err error) {
					m.log.fail(fmt.Errorf("fetch %s/%d: %w", topic, p, err))
				})
				fetches.EachRecord(func(r *kgo.Record) { m.log.deliver(record{r.Partition, r.Offset, string(r.Value)}) })
			}
		}()
		m.commit = func(ctx context.Context) error { return kc.CommitUncommittedOffsets(ctx) }
		m.close = sync.OnceValue(func() error {
			cancel()
			<-done
			kc.Close() // leaves the group with member epoch -1
			return nil
		})
		t.Cleanup(func() { m.close() })
		return m
	}
	return cl
}
