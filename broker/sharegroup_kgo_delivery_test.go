package broker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// The acceptance tests of share groups (issue 33) with the stock franz-go
// share consumer (kgo.ShareGroup, Record.Ack, Record.DeliveryCount) on a
// 3-node cluster. Each records every delivery (member, partition,
// offset, delivery count, when it was polled, what the test acknowledged
// and when) and checks the hand-overs: see checkHandOvers.

// kgoShareCluster starts 3 nodes serving share groups from the earliest
// offset, with fast share heartbeats, and creates topic.
func kgoShareCluster(t *testing.T, topic string, parts int32, opts ...testcluster.Option) (*testcluster.Cluster, *kgo.Client) {
	t.Helper()
	opts = append([]testcluster.Option{func(cfg *broker.Config) {
		cfg.ShareGroups.ResetEarliest = true
		cfg.GroupShare = groupcoord.ShareConfig{SessionTimeout: 30 * time.Second, HeartbeatInterval: 200 * time.Millisecond}
	}}, opts...)
	c := testcluster.Start(t, 3, opts...)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	createTopic(t, cl, topic, parts, 3)
	return c, cl
}

// produceN produces n records, round robin over parts partitions.
func produceN(t *testing.T, cl *kgo.Client, n int, parts int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Partition: int32(i) % parts, Value: []byte{byte(i)}}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// waitShareMembers waits until group has n members, each assigned a
// partition.
func waitShareMembers(t *testing.T, cl *kgo.Client, group string, n int) {
	t.Helper()
	eventually(t, time.Minute, "every member assigned a partition", func() bool {
		g, ok := shareDescribe(t, cl, group)
		if !ok || len(g.Members) != n {
			return false
		}
		for _, m := range g.Members {
			if len(m.Assignment.TopicPartitions) == 0 {
				return false
			}
		}
		return true
	})
}

// Two kgo members share a 3-partition topic: all 300 records are
// delivered, each exactly once (every one is accepted and no lock
// expires), so no record is ever held by both; and both members get
// records. Member a holds each poll's records for a while before it
// accepts them, and b joins while a holds some: neither b nor a's own
// next fetches may take what a holds.
func TestShareGroupKgoTwoMembersShare(t *testing.T) {
	t.Parallel()
	const topic, group, rounds, perRound = "k1", "g1", 10, 30
	c, cl := kgoShareCluster(t, topic, 3)
	log := &deliveryLog{}
	a := newKgoShareMember(t, c, "a", group, topic, kgo.ShareMaxRecords(15))
	a.hold = 100 * time.Millisecond
	a.run(t, log, acceptAll)
	waitShareMembers(t, cl, group, 1)
	// Produced in rounds, each consumed before the next: b joins during
	// the first, and later rounds reach it once it holds a partition.
	var b *kgoShareMember
	for r := range rounds {
		produceN(t, cl, perRound, 3)
		if r == 0 {
			eventually(t, time.Minute, "a polled records", func() bool { return len(log.snapshot()) > 0 })
			b = newKgoShareMember(t, c, "b", group, topic, kgo.ShareMaxRecords(15))
			b.run(t, log, acceptAll)
		}
		eventually(t, time.Minute, "the round consumed", func() bool {
			checkHandOvers(t, log.snapshot(), neverExpired)
			return log.done() == (r+1)*perRound
		})
	}
	per := int64(rounds * perRound / 3)
	waitStartOffsets(t, c, group, topic, map[int32]int64{0: per, 1: per, 2: per})
	quietly(2*time.Second, a, b)

	ds := log.snapshot()
	checkHandOvers(t, ds, neverExpired)
	recs := byRecord(ds)
	if len(recs) != rounds*perRound {
		t.Fatalf("%d distinct records delivered, want %d", len(recs), rounds*perRound)
	}
	got := map[string]int{}
	for k, v := range recs {
		if len(v) != 1 || v[0].count != 1 {
			t.Fatalf("p%d offset %d delivered %d times (first count %d), want once", k.p, k.off, len(v), v[0].count)
		}
		got[v[0].member]++
	}
	if got["a"] == 0 || got["b"] == 0 {
		t.Fatalf("records per member %v: one member got none", got)
	}
	t.Logf("records per member: %v", got)
}

// releaseRejectAccept releases the first delivery of every third record
// (offset%3 == 0), rejects the next ones (offset%3 == 1) and accepts the
// rest and every redelivery.
func releaseRejectAccept(r *kgo.Record) kgo.AckStatus {
	switch {
	case r.DeliveryCount() > 1 || r.Offset%3 == 2:
		return kgo.AckAccept
	case r.Offset%3 == 0:
		return kgo.AckRelease
	default:
		return kgo.AckReject
	}
}

// Two kgo members share one partition: a released record comes back
// (to either) with delivery count 2, after the release; a rejected one
// never comes back, nor an accepted one.
func TestShareGroupKgoReleaseReject(t *testing.T) {
	t.Parallel()
	const topic, group, n = "k2", "g2", 60
	c, cl := kgoShareCluster(t, topic, 1)
	produceN(t, cl, n, 1)
	log := &deliveryLog{}
	a := newKgoShareMember(t, c, "a", group, topic)
	b := newKgoShareMember(t, c, "b", group, topic)
	a.run(t, log, releaseRejectAccept)
	b.run(t, log, releaseRejectAccept)
	eventually(t, 2*time.Minute, "every record accepted or rejected", func() bool {
		checkHandOvers(t, log.snapshot(), neverExpired)
		return log.done() == n
	})
	waitStartOffsets(t, c, group, topic, map[int32]int64{0: n})
	quietly(3*time.Second, a, b)

	ds := log.snapshot()
	checkHandOvers(t, ds, neverExpired)
	recs := byRecord(ds)
	for off := range int64(n) {
		v := recs[shareRecKey{0, off}]
		var counts []int32
		for _, d := range v {
			counts = append(counts, d.count)
		}
		want := []int32{1}
		if off%3 == 0 {
			want = []int32{1, 2}
		}
		if len(counts) != len(want) || counts[0] != 1 || counts[len(counts)-1] != want[len(want)-1] {
			t.Fatalf("offset %d delivered with counts %v, want %v", off, counts, want)
		}
	}
}

// A record left unacknowledged past share_record_lock_duration (2 s)
// goes to another member, counted again, and not before the lock ran
// out; its first holder can no longer acknowledge it.
func TestShareGroupKgoLockExpiry(t *testing.T) {
	t.Parallel()
	const topic, group, n, lock = "k3", "g3", 30, 2 * time.Second
	c, cl := kgoShareCluster(t, topic, 1, func(cfg *broker.Config) { cfg.ShareGroups.LockDuration = lock })
	produceN(t, cl, n, 1)
	log := &deliveryLog{}
	var mu sync.Mutex // guards ackErrs
	var ackErrs []error
	// a fetches only while it polls (MaxConcurrentFetches 0), so each of
	// its locks started after start; it keeps its connection (a closed
	// one would release its records), and it never acknowledges.
	a := newKgoShareMember(t, c, "a", group, topic, kgo.MaxConcurrentFetches(0), kgo.ShareMaxRecords(10),
		kgo.ConnIdleTimeout(10*time.Minute), kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				ackErrs = append(ackErrs, r.Err)
			}
		}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var held []*kgo.Record
	keep := func(r *kgo.Record) kgo.AckStatus { held = append(held, r); return 0 }
	start := time.Now()
	for len(held) == 0 && ctx.Err() == nil {
		a.poll(ctx, t, log, keep)
	}
	if len(held) == 0 {
		t.Fatal("member a got no records")
	}
	b := newKgoShareMember(t, c, "b", group, topic)
	b.flush = true // accepted well within its own 2 s locks
	b.run(t, log, acceptAll)
	eventually(t, time.Minute, "b accepted every record", func() bool { return log.done() == n })
	b.stop()

	expired := func(prev, next kgoDelivery) bool {
		return prev.member == "a" && next.polled.UnixMilli() >= start.UnixMilli()+lock.Milliseconds()
	}
	ds := log.snapshot()
	checkHandOvers(t, ds, expired)
	recs := byRecord(ds)
	for _, r := range held {
		v := recs[shareRecKey{r.Partition, r.Offset}]
		if len(v) != 2 || v[1].member != "b" || v[1].count != 2 {
			t.Fatalf("offset %d held by a: deliveries %+v, want one more to b with count 2", r.Offset, v)
		}
	}

	// a's late accept finds its records taken.
	for _, r := range held {
		r.Ack(kgo.AckAccept)
	}
	if err := a.cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ackErrs) == 0 || !errors.Is(ackErrs[0], kerr.InvalidRecordState) {
		t.Fatalf("a's late accept: %v, want INVALID_RECORD_STATE", ackErrs)
	}
}

// With share_delivery_count_limit 3, a record released at every delivery
// is delivered three times (counts 1, 2, 3), then archived: it never
// comes back, and the share start offset moves past it.
func TestShareGroupKgoDeliveryLimit(t *testing.T) {
	t.Parallel()
	const topic, group, n = "k4", "g4", 40
	c, cl := kgoShareCluster(t, topic, 1, func(cfg *broker.Config) { cfg.ShareGroups.DeliveryLimit = 3 })
	produceN(t, cl, n, 1)
	log := &deliveryLog{}
	poison := func(off int64) bool { return off%5 == 0 }
	decide := func(r *kgo.Record) kgo.AckStatus {
		if poison(r.Offset) {
			return kgo.AckRelease
		}
		return kgo.AckAccept
	}
	a := newKgoShareMember(t, c, "a", group, topic)
	b := newKgoShareMember(t, c, "b", group, topic)
	a.run(t, log, decide)
	b.run(t, log, decide)
	eventually(t, 2*time.Minute, "every record accepted or released at its third delivery", func() bool {
		ds := log.snapshot()
		checkHandOvers(t, ds, neverExpired)
		recs := byRecord(ds)
		for off := range int64(n) {
			v := recs[shareRecKey{0, off}]
			if len(v) == 0 || (poison(off) && v[len(v)-1].count < 3) {
				return false
			}
		}
		return true
	})
	waitStartOffsets(t, c, group, topic, map[int32]int64{0: n})
	quietly(3*time.Second, a, b)

	ds := log.snapshot()
	checkHandOvers(t, ds, neverExpired)
	recs := byRecord(ds)
	for off := range int64(n) {
		var counts []int32
		for _, d := range recs[shareRecKey{0, off}] {
			counts = append(counts, d.count)
		}
		want := 1
		if poison(off) {
			want = 3
		}
		if len(counts) != want || counts[len(counts)-1] != int32(want) {
			t.Fatalf("offset %d delivered with counts %v, want 1..%d", off, counts, want)
		}
	}
}

// A member that renews its records (AckRenew) keeps them past
// share_record_lock_duration (4 s): another member polling all along
// never gets them, and the holder's accept, after more than twice the
// lock duration, succeeds.
func TestShareGroupKgoRenew(t *testing.T) {
	t.Parallel()
	const topic, group, n, lock = "k5", "g5", 20, 4 * time.Second
	c, cl := kgoShareCluster(t, topic, 1, func(cfg *broker.Config) { cfg.ShareGroups.LockDuration = lock })
	produceN(t, cl, n, 1)
	log := &deliveryLog{}
	var mu sync.Mutex // guards ackErrs
	var ackErrs []error
	a := newKgoShareMember(t, c, "a", group, topic, kgo.MaxConcurrentFetches(0), kgo.ShareMaxRecords(5),
		kgo.ConnIdleTimeout(10*time.Minute), kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				ackErrs = append(ackErrs, r.Err)
			}
		}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var held []*kgo.Record
	keep := func(r *kgo.Record) kgo.AckStatus { held = append(held, r); return 0 }
	start := time.Now()
	for len(held) == 0 && ctx.Err() == nil {
		a.poll(ctx, t, log, keep)
	}
	b := newKgoShareMember(t, c, "b", group, topic)
	b.run(t, log, acceptAll)
	// Renewed every half second (each renew waits for the broker's
	// answer before the next) until twice the lock duration has passed.
	for time.Since(start) < 2*lock+time.Second {
		for _, r := range held {
			r.Ack(kgo.AckRenew)
		}
		if err := a.cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, r := range held {
		r.Ack(kgo.AckAccept)
	}
	if err := a.cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "b accepted the other records", func() bool {
		return len(byRecord(log.snapshot())) == n
	})
	waitStartOffsets(t, c, group, topic, map[int32]int64{0: n})
	b.stop()

	mu.Lock()
	defer mu.Unlock()
	for _, err := range ackErrs {
		if err != nil {
			t.Fatalf("a's renewals and accept: %v", ackErrs)
		}
	}
	if len(ackErrs) == 0 {
		t.Fatal("no acknowledgement results for a")
	}
	recs := byRecord(log.snapshot())
	for _, r := range held {
		if v := recs[shareRecKey{r.Partition, r.Offset}]; len(v) != 1 {
			t.Fatalf("offset %d delivered %d times (to %s first): a renewed it", r.Offset, len(v), v[0].member)
		}
	}
}

// A member that leaves (its client closes) holding records gives them
// back: another member gets them, counted again, although their locks
// (10 minutes) have not expired; not before the first one closed. (kgo
// releases them itself on its last ShareFetch, epoch -1; the session's
// end would release them too.)
func TestShareGroupKgoLeaveReleases(t *testing.T) {
	t.Parallel()
	const topic, group, n = "k6", "g6", 20
	c, cl := kgoShareCluster(t, topic, 1, func(cfg *broker.Config) { cfg.ShareGroups.LockDuration = 10 * time.Minute })
	produceN(t, cl, n, 1)
	log := &deliveryLog{}
	a := newKgoShareMember(t, c, "a", group, topic, kgo.MaxConcurrentFetches(0), kgo.ShareMaxRecords(5))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var held []*kgo.Record
	keep := func(r *kgo.Record) kgo.AckStatus { held = append(held, r); return 0 }
	for len(held) == 0 && ctx.Err() == nil {
		a.poll(ctx, t, log, keep)
	}
	b := newKgoShareMember(t, c, "b", group, topic)
	b.run(t, log, acceptAll)
	// a may also hold up to 5 records it fetched but was not polled for.
	eventually(t, time.Minute, "b accepted the records a does not hold", func() bool { return log.done() >= n-len(held)-5 })
	closed := time.Now()
	a.cl.Close()
	eventually(t, time.Minute, "b accepted the records a held", func() bool { return log.done() == n })
	b.stop()

	ds := log.snapshot()
	checkHandOvers(t, ds, func(prev, next kgoDelivery) bool { return prev.member == "a" && next.polled.After(closed) })
	recs := byRecord(ds)
	for _, r := range held {
		if v := recs[shareRecKey{r.Partition, r.Offset}]; len(v) != 2 || v[1].member != "b" || v[1].count != 2 {
			t.Fatalf("offset %d held by a: deliveries %+v, want one more to b with count 2", r.Offset, v)
		}
	}
}
