package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/metadata"
)

const (
	// testGroup is the consumer group of TestGroupFailover.
	testGroup = "e2e-g"
	// groupMembers is the members of each round.
	groupMembers = 3
	// groupPartitions is the partitions of the group's topic.
	groupPartitions = 6
)

// TestGroupFailover: a group of 3 consumers (franz-go, manual commits)
// reads a 6-partition topic under load while the node coordinating the
// group is killed -9, and later the leader of a data partition; then the
// producers stop, the members read everything and close, and 3 fresh
// members of the same group resume. Every record acknowledged must be
// consumed, no record delivered below a commit in force, no committed
// offset go backwards (in the commits acknowledged, and in OffsetFetch
// answers after each fault and round), and each new round start exactly
// at the committed offsets. The long version repeats the faults and the
// restarts of every member, and also kills the coordinator while each new
// round of members joins.
func TestGroupFailover(t *testing.T) { groupFailover(t, false) }

// TestGroupFailoverServerSide is TestGroupFailover with KIP-848 members
// (kgo.ServerSideBalancer): the coordinator assigns, members heartbeat
// with ConsumerGroupHeartbeat and commit under their member epochs, and
// the node leading the group's __consumer_offsets partition is killed -9
// and restarted under them. The same checks hold: no acknowledged commit
// lost or gone backwards in OffsetFetch, every record consumed, each
// round resuming exactly at the commits.
func TestGroupFailoverServerSide(t *testing.T) { groupFailover(t, true) }

// groupFailover runs the group failover scenario, with KIP-848 members
// when serverSide is set.
func groupFailover(t *testing.T, serverSide bool) {
	phases := rounds(1, 3) // rounds of members with faults, each followed by a restart of every member
	faults := rounds(1, 2) // coordinator kill + data-leader kill, per phase
	ctx := testContext(t, time.Duration(rounds(3, 15))*time.Minute)
	c := startCluster(ctx, t)
	const topic = "groups"
	// 24 keys spread the records over every partition.
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic, Keys: 24}, groupPartitions, 100)
	waitEveryPartition(ctx, t, c, l.w, topic, time.Time{})
	g := &groupRun{c: c, l: l, topic: topic, gh: &GroupHistory{}, serverSide: serverSide}
	t.Cleanup(func() { g.closeMembers(context.Background(), t) })

	for round := 0; round <= phases; round++ {
		if round > 0 {
			g.observe(ctx, t, round, "before round") // the offsets the round must resume at
		}
		g.startMembers(t, round)
		since := time.Now()
		if round > 0 {
			l.w.Release()
		}
		if longRun() && round > 0 {
			// The new members are joining: the coordinator dies mid-rebalance.
			g.coordinatorKill(ctx, t, true)
			g.observe(ctx, t, round, "after coordinator kill during the join")
		}
		waitEveryPartition(ctx, t, c, l.w, topic, since)
		g.waitCommits(ctx, t, since, "round start")
		if serverSide {
			g.checkConsumerGroup(ctx, t)
		}
		if round < phases {
			for range faults {
				g.coordinatorKill(ctx, t, false)
				g.observe(ctx, t, round, "after coordinator kill")
				g.dataLeaderKill(ctx, t)
				g.observe(ctx, t, round, "after leader kill")
			}
			l.w.Hold()
		} else {
			stopWorkload(ctx, t, l.w)
		}
		g.drain(ctx, t)
		g.closeMembers(ctx, t)
		g.observe(ctx, t, round, "after closing every member")
	}

	r := CheckGroup(topic, l.h.Attempts(), g.gh.Events())
	l.sum.Grouped(r)
	t.Logf("group %s: %v", testGroup, r)
	if err := r.Err(); err != nil {
		t.Errorf("group check: %v", err)
	}
	if r.ResumeChecked != phases*groupPartitions || r.Consumed == 0 {
		t.Errorf("%d partitions resumed checked, want %d; %d records consumed", r.ResumeChecked, phases*groupPartitions, r.Consumed)
	}
	verify(ctx, t, c, &l.h, l.sum, topic)
}

// groupRun is TestGroupFailover's state: the cluster, the load on topic,
// the group's history and the current round's members.
type groupRun struct {
	c          *Cluster
	l          *load
	topic      string
	gh         *GroupHistory
	serverSide bool // members use KIP-848 (kgo.ServerSideBalancer)

	mu      sync.Mutex // guards members
	members []*Member
}

// startMembers starts the members of a round.
func (g *groupRun) startMembers(t *testing.T, round int) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range groupMembers {
		cfg := MemberConfig{Brokers: g.c.Seeds(), Group: testGroup, Topic: g.topic,
			Name: fmt.Sprintf("r%dm%d", round, i), Round: round, ServerSide: g.serverSide}
		cfg.Logger = memberLogger(t, cfg.Name)
		m, err := StartMember(cfg, g.gh)
		if err != nil {
			t.Fatalf("start member: %v", err)
		}
		g.members = append(g.members, m)
	}
}

// closeMembers closes the current members at once; each leaves the group
// after committing what it read.
func (g *groupRun) closeMembers(ctx context.Context, t *testing.T) {
	t.Helper()
	g.mu.Lock()
	ms := g.members
	g.members = nil
	g.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.Close(cctx)
		}()
	}
	wg.Wait()
	for i, m := range ms {
		if errs[i] != nil {
			t.Logf("member %s: leave group: %v", m.Name(), errs[i])
		}
		if e := m.Errors(); len(e) > 0 {
			t.Logf("member %s errors: %v; the first of each, whole:%s", m.Name(), e, m.FirstErrors())
		}
		if d, class := m.GroupSessionFailing(); d > maxGroupSessionFailing {
			t.Errorf("member %s: its group session failed for %v on end (%s), want at most %v",
				m.Name(), d.Round(time.Millisecond), class, maxGroupSessionFailing)
		}
	}
}

// maxGroupSessionFailing bounds how long a member's client may report its
// group session failing without a pause (Member.GroupSessionFailing): a
// member whose coordinator died finds the new one once the cluster drops
// the dead node from Metadata, after gossip's failure detection (about
// 4.5 s, at most about 7.5 s); the 45 s session timeout must never be what
// ends it.
const maxGroupSessionFailing = 10 * time.Second

// memberLogger is a kgo logger (level info) writing to name.log in the directory
// MINIKAFKA_E2E_KGO_LOGS names, or nil when it is unset.
func memberLogger(t *testing.T, name string) kgo.Logger {
	dir := os.Getenv("MINIKAFKA_E2E_KGO_LOGS")
	if dir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(dir, name+".log"))
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return kgo.BasicLogger(f, kgo.LogLevelInfo, func() string { return time.Now().Format("15:04:05.000 ") })
}

// observe records the group's committed offsets (OffsetFetch).
func (g *groupRun) observe(ctx context.Context, t *testing.T, round int, when string) {
	t.Helper()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	offs, asOf, err := g.c.FetchCommitted(octx, g.gh, testGroup, g.topic, groupPartitions)
	if err != nil {
		t.Fatalf("OffsetFetch %s: %v", when, err)
	}
	g.gh.Observed(round, asOf, offs)
	t.Logf("committed offsets %s: %v", when, offs)
}

// waitCommits waits until every partition has a commit acknowledged at or
// after since: the group consumes everywhere.
func (g *groupRun) waitCommits(ctx context.Context, t *testing.T, since time.Time, when string) {
	t.Helper()
	ps := make([]int32, groupPartitions)
	for i := range ps {
		ps[i] = int32(i)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := poll(wctx, "commits on every partition", func() (bool, error) {
		return g.gh.CommittedSince(ps, since), nil
	})
	if err != nil {
		committed, delivered, _ := g.gh.Progress()
		t.Fatalf("%s: the group did not commit on every partition since %v: %v (committed %v, delivered %v)",
			when, since.Format(time.StampMilli), err, committed, delivered)
	}
}

// coordinator finds the group's coordinator, and checks that it leads the
// group's partition of __consumer_offsets.
func (g *groupRun) coordinator(ctx context.Context, t *testing.T) int {
	t.Helper()
	var coord int
	var op int32
	var leader PartitionLeader
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := poll(cctx, "coordinator leading the group's offsets partition", func() (bool, error) {
		var err error
		if coord, err = g.c.GroupCoordinator(cctx, testGroup); err != nil {
			return false, err
		}
		if op, leader, err = g.c.OffsetsPartitionLeader(cctx, testGroup); err != nil {
			return false, err
		}
		return leader.Node == coord, nil
	})
	if err != nil {
		t.Fatalf("group %s: coordinator %d, leader of %s[%d] %v: %v", testGroup, coord, metadata.ConsumerOffsetsTopic, op, leader, err)
	}
	return coord
}

// coordinatorKill kills -9 the group's coordinator under load (joining:
// at once, while members join; else once commits flow on every
// partition), waits until another node coordinates the group and every
// partition has a commit acknowledged after the kill, then restarts the
// victim.
func (g *groupRun) coordinatorKill(ctx context.Context, t *testing.T, joining bool) {
	t.Helper()
	victim := g.coordinator(ctx, t)
	kind := "coordinator-kill-joining"
	if !joining {
		g.waitCommits(ctx, t, time.Now(), "before the coordinator kill")
		kind = "coordinator-kill"
	}
	t0 := time.Now()
	must(t, g.c.Kill(victim))
	g.l.sum.Fault(kind)
	next := g.coordinator(ctx, t)
	elected := time.Since(t0)
	if next == victim {
		t.Fatalf("group %s still coordinated by the killed node %d", testGroup, victim)
	}
	g.waitCommits(ctx, t, t0, fmt.Sprintf("after killing coordinator %d", victim))
	var d time.Duration
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := poll(wctx, "a commit sent after the kill acknowledged", func() (ok bool, _ error) {
		d, ok = g.gh.FirstCommitAfter(t0)
		return ok, nil
	})
	if err != nil {
		t.Fatalf("after killing coordinator %d: %v", victim, err)
	}
	g.l.sum.CoordinatorFailover(d)
	t.Logf("killed coordinator %d of group %s: node %d coordinates after %v, first commit sent after the kill acknowledged after %v",
		victim, testGroup, next, elected.Round(time.Millisecond), d.Round(time.Millisecond))
	must(t, g.c.StartNode(ctx, victim))
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	must(t, g.c.WaitReady(rctx, g.topic, metadata.ConsumerOffsetsTopic))
	heal(ctx, t, g.c, g.l.w, g.topic)
}

// dataLeaderKill kills -9 the leader of a data partition (one the group's
// coordinator does not lead, if there is one) with leaderKill, then waits
// until the group commits on every partition again.
func (g *groupRun) dataLeaderKill(ctx context.Context, t *testing.T) {
	t.Helper()
	coord := g.coordinator(ctx, t)
	ls, err := g.c.Leaders(ctx, g.topic)
	must(t, err)
	p := int32(0)
	for q, l := range ls {
		if l.Node != coord {
			p = int32(q)
			break
		}
	}
	t0 := time.Now()
	leaderKill(ctx, t, g.c, g.l.w, &g.l.h, g.l.sum, g.topic, p)
	g.waitCommits(ctx, t, t0, fmt.Sprintf("after killing the leader of %s[%d]", g.topic, p))
}

// drain waits, once nothing is produced any more, until every attempt has
// its outcome, every acknowledged record has been delivered, and every
// partition's commits cover what was delivered.
func (g *groupRun) drain(ctx context.Context, t *testing.T) {
	t.Helper()
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var missing, uncommitted int
	err := poll(dctx, "every acknowledged record consumed and committed", func() (bool, error) {
		committed, delivered, ids := g.gh.Progress()
		missing, uncommitted = 0, 0
		for _, a := range g.l.h.Attempts() {
			switch {
			case a.Outcome == Pending:
				missing++
			case a.Outcome == Acked && !ids[a.ID]:
				missing++
			}
		}
		for p, d := range delivered {
			if committed[p] < d {
				uncommitted++
			}
		}
		return missing == 0 && uncommitted == 0, nil
	})
	if err != nil {
		committed, delivered, _ := g.gh.Progress()
		t.Fatalf("%v: %d acknowledged records (or pending attempts) not consumed, %d partitions not committed (committed %v, delivered %v)",
			err, missing, uncommitted, committed, delivered)
	}
}

// checkConsumerGroup checks that the group runs KIP-848 and has settled:
// its coordinator describes it with ConsumerGroupDescribe (a classic
// group, which franz-go falls back to when the broker lacks
// ConsumerGroupHeartbeat v1, is GROUP_ID_NOT_FOUND there) with every
// member of the round in it, each owning partitions and owning its target
// assignment, all the topic's partitions owned once.
func (g *groupRun) checkConsumerGroup(ctx context.Context, t *testing.T) {
	t.Helper()
	var last string
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := poll(cctx, "the group described as a settled KIP-848 group", func() (bool, error) {
		coord, err := g.c.GroupCoordinator(cctx, testGroup)
		if err != nil {
			return false, err
		}
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{testGroup}
		rctx, rcancel := context.WithTimeout(cctx, 5*time.Second)
		defer rcancel()
		resp, err := Request(rctx, g.c.nodes[coord-1].KafkaAddr, req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = settledProblem(resp.(*kmsg.ConsumerGroupDescribeResponse))
		return last == "", nil
	})
	if err != nil {
		t.Fatalf("group %s: %v (last answer: %s)", testGroup, err, last)
	}
}

// settledProblem says why a ConsumerGroupDescribe answer does not show
// the round's members settled on the group's partitions, "" if it does.
func settledProblem(r *kmsg.ConsumerGroupDescribeResponse) string {
	if len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 {
		return fmt.Sprintf("%+v", r.Groups)
	}
	gr := r.Groups[0]
	if len(gr.Members) != groupMembers {
		return fmt.Sprintf("%d members, want %d", len(gr.Members), groupMembers)
	}
	owned := map[string]bool{}
	for _, m := range gr.Members {
		mine := map[string]bool{}
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				key := fmt.Sprintf("%x/%d", tp.TopicID, p)
				if owned[key] {
					return fmt.Sprintf("partition %s owned twice", key)
				}
				owned[key], mine[key] = true, true
			}
		}
		target := 0
		for _, tp := range m.TargetAssignment.TopicPartitions {
			for _, p := range tp.Partitions {
				target++
				if !mine[fmt.Sprintf("%x/%d", tp.TopicID, p)] {
					return fmt.Sprintf("member %s (epoch %d) not at its target yet", m.MemberID, m.MemberEpoch)
				}
			}
		}
		if len(mine) == 0 || target != len(mine) {
			return fmt.Sprintf("member %s (epoch %d) owns %d partitions, target %d", m.MemberID, m.MemberEpoch, len(mine), target)
		}
	}
	if len(owned) != groupPartitions {
		return fmt.Sprintf("%d partitions owned, want %d", len(owned), groupPartitions)
	}
	return ""
}
