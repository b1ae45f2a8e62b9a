package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/metadata"
)

const (
	// testShareGroup is the share group of TestShareGroupFailover.
	testShareGroup = "e2e-share"
	// shareMembers is the group's members.
	shareMembers = 3
	// sharePartitions is the partitions of the group's topic.
	sharePartitions = 3
	// shareDeliveryLimit is the nodes' share_delivery_count_limit.
	shareDeliveryLimit = 5
)

// TestShareGroupFailover (issue 33): 3 stock franz-go share consumers in
// one share group accept (and release one first delivery in 20) the
// records of a 3-partition topic under load, while the leader of a data
// partition, the group's coordinator, and the leader of the
// __share_group_state partition holding a share partition's state are
// killed -9 in turn and restarted. Then the producers stop and the
// members consume until every share partition's start offset reached its
// log's end. CheckShare: every record acknowledged to its producer (and
// every record delivered) accepted successfully exactly once, none
// delivered again after its accept succeeded, delivery counts never
// repeated or going down. Then Verify checks the topic's logs and
// replicas. The long version repeats the faults.
func TestShareGroupFailover(t *testing.T) {
	ctx := testContext(t, time.Duration(rounds(3, 12))*time.Minute)
	c := startCluster(ctx, t, "--share-auto-offset-reset", "earliest", "--share-state-partitions", "4")
	const topic = "shares"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic, Keys: 12, Rate: 250}, sharePartitions, 50)
	s := &shareRun{c: c, l: l, topic: topic, h: &ShareHistory{}}
	t.Cleanup(func() { s.closeMembers(context.Background(), t) })
	s.startMembers(t)
	s.waitAccepts(ctx, t, allShareParts(), time.Time{}, "start")
	for i := range rounds(1, 6) {
		s.dataLeaderKill(ctx, t, int32(i%sharePartitions))
		s.coordinatorKill(ctx, t)
		s.stateLeaderKill(ctx, t)
	}
	stopWorkload(ctx, t, l.w)
	start := s.drain(ctx, t)
	s.closeMembers(ctx, t)
	r := CheckShare(topic, l.h.Attempts(), s.h.Events(), start, shareDeliveryLimit)
	l.sum.Shared(r)
	t.Logf("share group %s: %v", testShareGroup, r)
	for _, u := range r.UnconfirmedSample {
		t.Logf("accepted unconfirmed: %s", u)
	}
	if err := r.Err(); err != nil {
		t.Errorf("share check: %v", err)
	}
	if r.Accepted == 0 || r.Redeliveries == 0 {
		t.Errorf("%d accepted, %d redeliveries: the scenario proved little", r.Accepted, r.Redeliveries)
	}
	verify(ctx, t, c, &l.h, l.sum, topic)
}

// stampMilli is the time format of the fault logs, the one ShareEvent
// prints.
const stampMilli = "15:04:05.000"

func allShareParts() []int32 {
	ps := make([]int32, sharePartitions)
	for i := range ps {
		ps[i] = int32(i)
	}
	return ps
}

// shareRun is TestShareGroupFailover's state.
type shareRun struct {
	c     *Cluster
	l     *load
	topic string
	h     *ShareHistory

	mu      sync.Mutex // guards members
	members []*ShareMember
}

func (s *shareRun) startMembers(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range shareMembers {
		m, err := StartShareMember(ShareMemberConfig{Brokers: s.c.Seeds(), Group: testShareGroup, Topic: s.topic,
			Name: fmt.Sprintf("s%d", i), ReleaseEvery: 20}, s.h)
		if err != nil {
			t.Fatalf("start share member: %v", err)
		}
		s.members = append(s.members, m)
	}
}

func (s *shareRun) closeMembers(ctx context.Context, t *testing.T) {
	t.Helper()
	s.mu.Lock()
	ms := s.members
	s.members = nil
	s.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Close(cctx); err != nil {
				t.Logf("share member %s: leave: %v", m.Name(), err)
			}
		}()
	}
	wg.Wait()
	for _, m := range ms {
		if e := m.Errors(); len(e) > 0 {
			t.Logf("share member %s errors: %v", m.Name(), e)
		}
	}
}

// waitAccepts waits until each of ps has a successful accept of a record
// delivered after since.
func (s *shareRun) waitAccepts(ctx context.Context, t *testing.T, ps []int32, since time.Time, when string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := poll(wctx, "accepts on "+fmt.Sprint(ps), func() (bool, error) { return s.h.AcceptedOn(ps, since), nil })
	if err != nil {
		t.Fatalf("%s: no successful accept on every partition of %v: %v", when, ps, err)
	}
}

// measure waits for accepts on ps after the kill at t0 and records the
// failover time of kind.
func (s *shareRun) measure(ctx context.Context, t *testing.T, kind string, ps []int32, t0 time.Time) time.Duration {
	t.Helper()
	s.waitAccepts(ctx, t, ps, t0, "after "+kind)
	d, _ := s.h.FirstAcceptAfter(ps, t0)
	s.l.sum.ShareFailover(kind, d)
	return d
}

// dataLeaderKill kills -9 the leader of data partition p, checks that
// new leaders with higher epochs took over every partition it led, waits
// until the members accept again on each of them (and the producers are
// acknowledged there), then restarts the victim and heals.
func (s *shareRun) dataLeaderKill(ctx context.Context, t *testing.T, p int32) {
	t.Helper()
	before, err := s.c.Leaders(ctx, s.topic)
	must(t, err)
	victim := before[p].Node
	led := ledBy(before, victim)
	s.waitAccepts(ctx, t, led, time.Now(), "before the leader kill")
	t0 := time.Now()
	must(t, s.c.Kill(victim))
	s.l.sum.Fault("share-leader-kill")
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	after, err := s.c.Leaders(fctx, s.topic)
	if err != nil {
		t.Fatalf("no new leaders of %s after killing node %d: %v", s.topic, victim, err)
	}
	s.l.sum.Elected(time.Since(t0))
	var worst time.Duration
	for _, q := range led {
		if after[q].Node == victim || after[q].Epoch <= before[q].Epoch {
			t.Fatalf("%s[%d]: leader %v after killing %v", s.topic, q, after[q], before[q])
		}
		must(t, s.l.w.WaitAcked(fctx, q, t0, 1))
		d, ok := FailoverTime(s.l.h.Attempts(), s.topic, q, t0)
		if !ok {
			t.Fatalf("failover time of %s[%d] not measurable", s.topic, q)
		}
		worst = max(worst, d)
	}
	s.l.sum.Failover(worst)
	d := s.measure(ctx, t, "share-leader-kill", led, t0)
	t.Logf("killed leader %d of %s%v at %s: first producer acknowledgement after %v, first accept of a record delivered after the kill %v",
		victim, s.topic, led, t0.Format(stampMilli), worst.Round(time.Millisecond), d.Round(time.Millisecond))
	s.restart(ctx, t, victim, s.topic)
}

// coordinatorKill kills -9 the share group's coordinator (FindCoordinator,
// the leader of its __consumer_offsets partition), waits until another
// node coordinates it and the members accept on every partition, then
// restarts the victim.
func (s *shareRun) coordinatorKill(ctx context.Context, t *testing.T) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	victim, err := s.c.GroupCoordinator(cctx, testShareGroup)
	must(t, err)
	s.waitAccepts(ctx, t, allShareParts(), time.Now(), "before the coordinator kill")
	t0 := time.Now()
	must(t, s.c.Kill(victim))
	s.l.sum.Fault("share-coordinator-kill")
	next, err := s.c.GroupCoordinator(cctx, testShareGroup)
	must(t, err)
	if next == victim {
		t.Fatalf("share group %s still coordinated by the killed node %d", testShareGroup, victim)
	}
	d := s.measure(ctx, t, "share-coordinator-kill", allShareParts(), t0)
	t.Logf("killed coordinator %d of share group %s at %s: node %d coordinates after %v; first accept of a record delivered after it %v later",
		victim, testShareGroup, t0.Format(stampMilli), next, time.Since(t0).Round(time.Millisecond), d.Round(time.Millisecond))
	s.restart(ctx, t, victim, metadata.ConsumerOffsetsTopic)
}

// restart starts a killed node again, waits until it serves topics and
// s.topic, and heals.
func (s *shareRun) restart(ctx context.Context, t *testing.T, id int, topic string) {
	t.Helper()
	must(t, s.c.StartNode(ctx, id))
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	must(t, s.c.WaitReady(rctx, s.topic, topic))
	heal(ctx, t, s.c, s.l.w, s.topic)
}

// stateLeaderKill kills -9 the leader of the __share_group_state
// partition that holds a share partition's state (one whose data leader
// is another node, if there is one), waits until the members accept on
// that partition again, then restarts it.
func (s *shareRun) stateLeaderKill(ctx context.Context, t *testing.T) {
	t.Helper()
	p, sp, victim := s.stateLeader(ctx, t)
	s.waitAccepts(ctx, t, []int32{p}, time.Now(), "before the state leader kill")
	t0 := time.Now()
	must(t, s.c.Kill(victim))
	s.l.sum.Fault("share-state-leader-kill")
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	after, err := s.c.Leaders(fctx, metadata.ShareGroupStateTopic)
	if err != nil || after[sp].Node == victim {
		t.Fatalf("no new leader of %s[%d] after killing %d: %v", metadata.ShareGroupStateTopic, sp, victim, err)
	}
	d := s.measure(ctx, t, "share-state-leader-kill", []int32{p}, t0)
	t.Logf("killed leader %d of %s[%d] (state of %s[%d]) at %s: first accept of a record delivered after it %v later",
		victim, metadata.ShareGroupStateTopic, sp, s.topic, p, t0.Format(stampMilli), d.Round(time.Millisecond))
	s.restart(ctx, t, victim, metadata.ShareGroupStateTopic)
}

// stateLeader finds a data partition p whose share state partition sp is
// led by another node than p's leader (else partition 0), and sp's
// leader. The state partition is Kafka's: the Java hash of
// "group:topicId:partition" with the topic id in base64url.
func (s *shareRun) stateLeader(ctx context.Context, t *testing.T) (p, sp int32, leader int) {
	t.Helper()
	md, err := s.c.Metadata(ctx, s.c.Running()[0], s.topic)
	must(t, err)
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s: %+v", s.topic, md.Topics)
	}
	id := base64.RawURLEncoding.EncodeToString(md.Topics[0].TopicID[:])
	data, err := s.c.Leaders(ctx, s.topic)
	must(t, err)
	state, err := s.c.Leaders(ctx, metadata.ShareGroupStateTopic)
	must(t, err)
	for q := int32(sharePartitions - 1); q >= 0; q-- {
		key := fmt.Sprintf("%s:%s:%d", testShareGroup, id, q)
		p, sp = q, metadata.GroupPartition(key, int32(len(state)))
		if state[sp].Node != data[q].Node {
			break
		}
	}
	return p, sp, state[sp].Node
}

// drain waits, once nothing is produced any more, until every share
// partition's start offset reached its log's end, and returns the start
// offsets.
func (s *shareRun) drain(ctx context.Context, t *testing.T) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.c.Seeds()...))
	must(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := map[int32]int64{}
	ends := map[int32]int64{}
	err = poll(dctx, "every share partition's start offset at its log's end", func() (bool, error) {
		eo, err := adm.ListEndOffsets(dctx, s.topic)
		if err != nil {
			return false, nil
		}
		so, err := adm.DescribeShareGroupOffsets(dctx, testShareGroup)
		if err != nil {
			return false, nil
		}
		done := true
		eo.Each(func(o kadm.ListedOffset) {
			ends[o.Partition] = o.Offset
			got, ok := so[testShareGroup].Offsets.Lookup(s.topic, o.Partition)
			if ok && got.Err == nil {
				start[o.Partition] = got.StartOffset
			}
			done = done && ok && got.Err == nil && got.StartOffset >= o.Offset
		})
		return done && len(ends) == sharePartitions, nil
	})
	if err != nil {
		t.Fatalf("%v: start offsets %v, log ends %v", err, start, ends)
	}
	return start
}
