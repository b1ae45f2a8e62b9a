package e2e

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"
)

// longRun reports whether the long version of the scenarios was asked for
// (make e2e).
func longRun() bool { return os.Getenv("MINIKAFKA_E2E_LONG") == "1" }

// rounds is short in the short version, long in the long one.
func rounds(short, long int) int {
	if longRun() {
		return long
	}
	return short
}

// runSummary adds up every scenario's Summary; TestMain prints it after a
// long run.
var runSummary Summary

// scenarioSummary is a scenario's Summary, logged and added to runSummary
// when the test ends.
func scenarioSummary(t *testing.T) *Summary {
	s := &Summary{}
	t.Cleanup(func() {
		runSummary.Merge(s)
		if s.Faults() > 0 {
			t.Logf("\n%s", s)
		}
	})
	return s
}

// testContext bounds a scenario; it ends at d or when the test ends.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startCluster starts three nodes with extra flags, failing the test if
// they do not form a cluster within a minute.
func startCluster(ctx context.Context, t *testing.T, args ...string) *Cluster {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := Start(sctx, t, Options{Binary: nodeBinary, Args: args})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	return c
}

// startWorkload starts a workload on topic and stops it at the end of the
// test if the test did not.
func startWorkload(t *testing.T, c *Cluster, h *History, cfg WorkloadConfig) *Workload {
	t.Helper()
	cfg.Brokers = c.Seeds()
	w, err := StartWorkload(cfg, h)
	if err != nil {
		t.Fatalf("start workload: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Stop(ctx)
	})
	return w
}

// stopWorkload stops the producers, giving them a generous minute to get
// every result.
func stopWorkload(ctx context.Context, t *testing.T, w *Workload) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := w.Stop(sctx); err != nil {
		t.Logf("workload stop: %v (the records without a result count as unknown)", err)
	}
	t.Logf("producer errors: %v", w.Errors())
}

// verify runs Cluster.Verify and fails the test on any problem.
func verify(ctx context.Context, t *testing.T, c *Cluster, h *History, sum *Summary, topics ...string) *Verification {
	t.Helper()
	v, err := c.Verify(ctx, h.Attempts(), topics...)
	sum.Verified(v)
	if v != nil {
		t.Logf("verified: %v", v)
	}
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if v.Report.Acked == 0 {
		t.Fatalf("nothing was acknowledged: the scenario proved nothing")
	}
	return v
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// leaderKill kills -9 the leader of topic/p under load, checks that new
// leaders with higher epochs took over every partition the victim led,
// measures how long until every node's metadata showed them and the
// failover time (kill to the first acknowledgement of a record produced
// after the kill; the longest over the partitions the victim led), and
// restarts the victim.
func leaderKill(ctx context.Context, t *testing.T, c *Cluster, w *Workload, h *History, sum *Summary, topic string, p int32) {
	t.Helper()
	before, err := c.Leaders(ctx, topic)
	must(t, err)
	victim := before[p].Node
	led := ledBy(before, victim)
	// Traffic must flow on the partition before the fault.
	must(t, w.WaitAcked(ctx, p, time.Now(), 1))

	t0 := time.Now()
	must(t, c.Kill(victim))
	sum.Fault("leader-kill")
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	after, err := c.Leaders(fctx, topic)
	if err != nil {
		t.Fatalf("no new leaders of %s after killing node %d: %v", topic, victim, err)
	}
	elected := time.Since(t0)
	sum.Elected(elected)
	for _, q := range led {
		if after[q].Node == victim || after[q].Epoch <= before[q].Epoch {
			t.Fatalf("%s[%d]: leader %v after killing %v", topic, q, after[q], before[q])
		}
	}
	for _, q := range led {
		if err := w.WaitAcked(fctx, q, t0, 1); err != nil {
			t.Fatalf("no acknowledgement on %s[%d] after killing its leader %d: %v", topic, q, victim, err)
		}
	}
	attempts := h.Attempts()
	var worst time.Duration
	for _, q := range led {
		d, ok := FailoverTime(attempts, topic, q, t0)
		if !ok {
			t.Fatalf("failover time of %s[%d] not measurable", topic, q)
		}
		worst = max(worst, d)
	}
	sum.Failover(worst)
	t.Logf("killed leader %d of %s%v: new leaders in metadata after %v, first acknowledgement after %v; [%d] now led by %d (epoch %d)",
		victim, topic, led, elected.Round(time.Millisecond), worst.Round(time.Millisecond), p, after[p].Node, after[p].Epoch)
	must(t, c.StartNode(ctx, victim))
	heal(ctx, t, c, w, topic)
}

// heal waits, after a node came back, until the cluster is ready for topic
// and every replica of topic holds the same log, holding the producers
// meanwhile (records in flight go on to their results). So each fault
// starts from a healed cluster, not from a node still catching up, and the
// failover time of one fault is not mixed with the catch-up of the last.
func heal(ctx context.Context, t *testing.T, c *Cluster, w *Workload, topic string) {
	t.Helper()
	ls, err := c.Leaders(ctx, topic)
	must(t, err)
	w.Hold()
	defer w.Release()
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	must(t, c.WaitReplicasInSync(hctx, topic, len(ls)))
}

// ledBy lists the partitions a node leads.
func ledBy(ls []PartitionLeader, node int) []int32 {
	var out []int32
	for q, l := range ls {
		if l.Node == node {
			out = append(out, int32(q))
		}
	}
	return out
}

// otherNode returns a node of 1..NodeCount that is not in except.
func otherNode(except ...int) int {
	for id := 1; id <= NodeCount; id++ {
		if !slices.Contains(except, id) {
			return id
		}
	}
	return -1
}

// load is a scenario's topic under a running workload: the History it
// records and the Summary its faults and verification go to.
type load struct {
	c     *Cluster
	topic string
	h     History
	sum   *Summary
	w     *Workload
}

// startLoad creates cfg.Topic with partitions × RF3 on c, starts a
// workload on it and waits until it has acknowledged warm records.
func startLoad(ctx context.Context, t *testing.T, c *Cluster, cfg WorkloadConfig, partitions int32, warm int) *load {
	t.Helper()
	must(t, c.CreateTopic(ctx, cfg.Topic, partitions, 3))
	l := &load{c: c, topic: cfg.Topic, sum: scenarioSummary(t)}
	l.w = startWorkload(t, c, &l.h, cfg)
	must(t, l.w.WaitAcked(ctx, -1, time.Time{}, warm))
	return l
}

// finish stops the workload and verifies the topic.
func (l *load) finish(ctx context.Context, t *testing.T) {
	t.Helper()
	stopWorkload(ctx, t, l.w)
	verify(ctx, t, l.c, &l.h, l.sum, l.topic)
}
