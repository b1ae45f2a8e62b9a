package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/record"
)

// probeProducer names the records of hand-built probes in histories.
const probeProducer = 1000

// probeRequest is a plain (non-idempotent) acks=all Produce request of one
// record carrying id, to topic/partition.
func probeRequest(t *testing.T, topic string, partition int32, id ID) *kmsg.ProduceRequest {
	t.Helper()
	batch, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone),
		[]record.Record{{Timestamp: time.Now().UnixMilli(), Key: []byte(id.Key), Value: id.Value(0)}})
	must(t, err)
	req := produceRequest(topic, batch)
	req.Topics[0].Partitions[0].Partition = partition
	return req
}

// pauseLeader pauses the leader of topic/p (SIGSTOP) for longer than the
// election timeout while producers write, with a produce request queued on
// a connection to it, then resumes it (SIGCONT). The queued request, which
// the node reads only once it runs again as a stale leader, must not be
// acknowledged unless it is really committed: its outcome goes into the
// history, which the checker holds against the final log.
func pauseLeader(ctx context.Context, t *testing.T, c *Cluster, w *Workload, h *History, sum *Summary, topic string, p int32, probeSeq int64) {
	t.Helper()
	old, err := c.Leader(ctx, topic, p)
	must(t, err)
	must(t, w.WaitAcked(ctx, p, time.Now(), 1))
	probe, err := Dial(ctx, c.Node(old.Node).KafkaAddr)
	must(t, err)
	defer probe.Close()

	t0 := time.Now()
	must(t, c.Pause(ctx, old.Node))
	sum.Fault("leader-pause")
	id := ID{Producer: probeProducer, Key: "probe", Seq: probeSeq}
	must(t, probe.Send(probeRequest(t, topic, p, id)))
	sent := time.Now()

	// The others elect a new leader, which acknowledges new records.
	nl, err := c.Leader(ctx, topic, p)
	if err != nil {
		c.Resume(old.Node)
		t.Fatalf("no new leader of %s[%d] while %d is paused: %v", topic, p, old.Node, err)
	}
	if nl.Node == old.Node || nl.Epoch <= old.Epoch {
		t.Fatalf("%s[%d]: leader %v while the old leader %v is paused", topic, p, nl, old)
	}
	if err := w.WaitAcked(ctx, p, t0, 1); err != nil {
		c.Resume(old.Node)
		t.Fatalf("no acknowledgements on %s[%d] while its old leader is paused: %v", topic, p, err)
	}
	// Stay paused at least four election timeouts (500ms each).
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(t0.Add(2 * time.Second))):
	}
	must(t, c.Resume(old.Node))

	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	a := Attempt{ID: id, Topic: topic, Partition: p, Outcome: Unknown, Offset: -1, Sent: sent}
	resp, err := probe.Receive(rctx)
	a.Done = time.Now()
	switch {
	case err != nil:
		a.Err = err
		t.Logf("probe to the paused leader %d: %v (unknown outcome)", old.Node, err)
	default:
		pr := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if pr.ErrorCode == 0 {
			// The node read the probe only after it resumed, when
			// another leader had been elected: it may acknowledge it only
			// as a leader again, in a newer term, never in its stale one.
			a.Outcome, a.Offset = Acked, pr.BaseOffset
			h := fetchBatchAt(ctx, t, c, topic, p, pr.BaseOffset)
			t.Logf("probe to the paused leader %d: acknowledged at offset %d, leader epoch %d", old.Node, pr.BaseOffset, h.PartitionLeaderEpoch)
			if h.PartitionLeaderEpoch < nl.Epoch {
				t.Errorf("the paused leader %d acknowledged the probe at offset %d in epoch %d, older than epoch %d of the leader elected meanwhile",
					old.Node, pr.BaseOffset, h.PartitionLeaderEpoch, nl.Epoch)
			}
		} else {
			a.Err = &client.KafkaError{Code: pr.ErrorCode}
			t.Logf("probe to the paused leader %d: refused with code %d", old.Node, pr.ErrorCode)
		}
	}
	h.Add(a)
	t.Logf("paused leader %d of %s[%d] for %v; new leader %d (epoch %d)", old.Node, topic, p,
		time.Since(t0).Round(time.Millisecond), nl.Node, nl.Epoch)
	heal(ctx, t, c, w, topic)
}

// TestPausedLeader pauses a partition's leader (SIGSTOP) longer than the
// election timeout under load, then resumes it: the stale leader must not
// accept or acknowledge writes that are not committed, and nothing is lost
// or duplicated.
func TestPausedLeader(t *testing.T) {
	pauses := rounds(1, 4)
	ctx := testContext(t, 3*time.Minute)
	c := startCluster(ctx, t)
	const topic = "pause"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 3, 100)
	w, h, sum := l.w, &l.h, l.sum
	for i := range pauses {
		pauseLeader(ctx, t, c, w, h, sum, topic, int32(i%3), int64(i))
	}
	must(t, w.WaitAcked(ctx, -1, time.Now(), 100))
	l.finish(ctx, t)
}

// snapshotArgs make partition groups snapshot after 64 entries, checked
// every 200-400ms, keeping 16 entries behind each snapshot: a follower
// that misses a few hundred entries must catch up from a snapshot.
var snapshotArgs = []string{
	"--raft-snapshot-threshold", "64",
	"--raft-trailing-logs", "16",
	"--raft-snapshot-interval", "200ms",
}

// snapshotTrailing is --raft-trailing-logs of snapshotArgs.
const snapshotTrailing = 16

// followerCatchUp kills -9 a follower of topic/p, keeps writing until
// every live replica's newest snapshot is more than snapshotTrailing
// entries past the follower's last Raft index (raft compacts its log up
// to there, so the entries the follower lacks are gone everywhere), then
// restarts it and waits until it holds a snapshot past that point too:
// one it can only have been sent by the leader.
func followerCatchUp(ctx context.Context, t *testing.T, c *Cluster, w *Workload, sum *Summary, topic string, p int32) {
	t.Helper()
	l, err := c.Leader(ctx, topic, p)
	must(t, err)
	f := otherNode(l.Node)
	must(t, c.Kill(f))
	sum.Fault("follower-kill")
	fdir := ReplicaDir(c.Node(f).DataDir, topic, p)
	last, err := RaftLastIndex(c.Node(f).DataDir, fdir)
	must(t, err)
	need := last + snapshotTrailing + 1
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = poll(wctx, "live replicas compacted past the follower", func() (bool, error) {
		for _, id := range c.Running() {
			idx, err := NewestSnapshotIndex(ReplicaDir(c.Node(id).DataDir, topic, p))
			if err != nil || idx < need {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("follower %d of %s[%d] at raft index %d: %v", f, topic, p, last, err)
	}
	t0 := time.Now()
	must(t, c.StartNode(ctx, f))
	must(t, c.WaitReady(ctx, topic))
	err = poll(wctx, "follower installed a snapshot", func() (bool, error) {
		idx, err := NewestSnapshotIndex(fdir)
		return err == nil && idx >= need, err
	})
	if err != nil {
		t.Fatalf("follower %d of %s[%d] did not install a snapshot past index %d: %v", f, topic, p, need, err)
	}
	idx, _ := NewestSnapshotIndex(fdir)
	t.Logf("follower %d of %s[%d] was at raft index %d; caught up from a snapshot at index %d in %v",
		f, topic, p, last, idx, time.Since(t0).Round(time.Millisecond))
	must(t, w.WaitAcked(ctx, p, t0, 1))
	heal(ctx, t, c, w, topic)
}

// TestFollowerCatchesUpFromSnapshot kills a follower long enough that the
// others compact their Raft logs past it, restarts it, and proves it
// caught up (from a snapshot) to a byte-identical log, with nothing
// acknowledged lost or duplicated.
func TestFollowerCatchesUpFromSnapshot(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	c := startCluster(ctx, t, snapshotArgs...)
	const topic = "snap"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 1, 100)
	w, sum := l.w, l.sum
	for range rounds(1, 3) {
		followerCatchUp(ctx, t, c, w, sum, topic, 0)
	}
	l.finish(ctx, t)
}

// TestRollingRestartUnderLoad restarts every node in turn, gracefully,
// while producers write.
func TestRollingRestartUnderLoad(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	c := startCluster(ctx, t)
	const topic = "rolling"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 3, 100)
	w, sum := l.w, l.sum
	for range rounds(1, 2) {
		rollingRestart(ctx, t, c, w, sum, topic)
	}
	l.finish(ctx, t)
	// A peer's graceful restart is its own news, not an error of the
	// nodes that stay up: raft's lines about it are at most warnings.
	for id := 1; id <= NodeCount; id++ {
		lines, err := c.ErrorLines(id, "raft")
		must(t, err)
		for _, line := range lines[:min(len(lines), 5)] {
			t.Errorf("node %d logged a raft error during graceful restarts (%d in all): %s", id, len(lines), line)
		}
	}
}

// rollingRestart restarts each node gracefully in turn; after each, the
// cluster must be ready and acknowledge new records on every partition.
func rollingRestart(ctx context.Context, t *testing.T, c *Cluster, w *Workload, sum *Summary, topic string) {
	t.Helper()
	for id := 1; id <= NodeCount; id++ {
		t0 := time.Now()
		must(t, c.RestartNode(ctx, id, topic))
		sum.Fault("graceful-restart")
		waitEveryPartition(ctx, t, c, w, topic, t0)
		heal(ctx, t, c, w, topic)
	}
}

// waitEveryPartition waits until every partition of topic acknowledged a
// record produced at or after since.
func waitEveryPartition(ctx context.Context, t *testing.T, c *Cluster, w *Workload, topic string, since time.Time) {
	t.Helper()
	ls, err := c.Leaders(ctx, topic)
	must(t, err)
	for p := range ls {
		must(t, w.WaitAcked(ctx, int32(p), since, 1))
	}
}

// TestWholeClusterKill kills -9 every node at once under load and starts
// them again: everything acknowledged before the crash survives, and
// writing resumes.
func TestWholeClusterKill(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	c := startCluster(ctx, t)
	const topic = "crash"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 3, 200)
	w, sum := l.w, l.sum
	for range rounds(1, 3) {
		must(t, w.WaitAcked(ctx, -1, time.Now(), 100))
		clusterKill(ctx, t, c, w, sum, topic)
	}
	l.finish(ctx, t)
}

// clusterKill kills every node at once, restarts them all and waits until
// every partition acknowledges new records.
func clusterKill(ctx context.Context, t *testing.T, c *Cluster, w *Workload, sum *Summary, topic string) {
	t.Helper()
	must(t, c.KillAll())
	sum.Fault("cluster-kill")
	t0 := time.Now()
	must(t, c.StartAll(ctx, topic))
	waitEveryPartition(ctx, t, c, w, topic, t0)
	t.Logf("whole cluster killed and restarted; every partition writable after %v", time.Since(t0).Round(time.Millisecond))
	heal(ctx, t, c, w, topic)
}

// TestSecondFaultAfterANodeReturns kills -9 a follower of a partition,
// writes on for 12 s, restarts it and, once the cluster is ready, kills
// the partition's other follower. The returned node must serve within
// seconds and the partition commit on with it: its leaders (the metadata
// group's and the partition's) must replicate to it as soon as it answers,
// not when raft's backoff, grown to 10 s while it was away, runs out: the
// node serves only once its metadata caught up.
func TestSecondFaultAfterANodeReturns(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	c := startCluster(ctx, t)
	const topic = "second-fault"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 1, 100)
	w, sum := l.w, l.sum
	ld, err := c.Leader(ctx, topic, 0)
	must(t, err)
	away, other := otherNode(ld.Node), otherNode(ld.Node, otherNode(ld.Node))
	must(t, c.Kill(away))
	sum.Fault("follower-kill")
	select {
	case <-time.After(12 * time.Second): // raft's backoff then waits 10 s, from about 10 s after the kill
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	started := time.Now()
	must(t, c.StartNode(ctx, away))
	must(t, c.WaitReady(ctx, topic))
	t0 := time.Now()
	must(t, c.Kill(other))
	sum.Fault("follower-kill")
	must(t, w.WaitAcked(ctx, 0, t0, 1))
	ready, took := t0.Sub(started), time.Since(t0)
	t.Logf("node %d back after 12 s: started and the cluster ready in %v; node %d killed then: first acknowledgement %v after the kill",
		away, ready.Round(time.Millisecond), other, took.Round(time.Millisecond))
	if ready > 4*time.Second || took > 2*time.Second {
		t.Errorf("the returned node's start to a ready cluster took %v (want at most 4 s), the second kill to an acknowledgement %v (want at most 2 s)", ready, took)
	}
	must(t, c.StartNode(ctx, other))
	must(t, c.WaitReady(ctx, topic))
	heal(ctx, t, c, w, topic)
	l.finish(ctx, t)
}
