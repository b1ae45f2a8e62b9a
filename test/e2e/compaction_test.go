package e2e

import (
	"context"
	"testing"
	"time"
)

// TestCompactionUnderFaults (issue 30): a compacted topic whose leaders
// look for cleaning work every 300 ms, written by two idempotent
// producers over 20 keys through leader kills (kill -9) and a whole-cluster
// kill. Afterwards, for every key the latest acknowledged value is read
// unless a later record of the key replaced it, never an older value after
// a newer one, nothing twice; the replicas are byte-identical; and the
// cleanings did remove acknowledged records (superseded ones).
func TestCompactionUnderFaults(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	c := startCluster(ctx, t, "--log-cleaner-backoff", "300ms")
	const topic = "compacted"
	l := startCompactedLoad(ctx, t, c, topic, 2, map[string]string{"min.cleanable.dirty.ratio": "0.1", "delete.retention.ms": "1000"},
		WorkloadConfig{Keys: 20}, 500)
	for i := range rounds(1, 6) {
		leaderKill(ctx, t, c, l.w, &l.h, l.sum, topic, int32(i%2))
		must(t, l.w.WaitAcked(ctx, -1, time.Now(), 300))
	}
	clusterKill(ctx, t, c, l.w, l.sum, topic)
	must(t, l.w.WaitAcked(ctx, -1, time.Now(), 300))
	stopWorkload(ctx, t, l.w)
	v := l.verifyCompacted(ctx, t)
	if v.Report.Superseded == 0 {
		t.Fatal("no acknowledged record was cleaned away: the scenario proved nothing about compaction")
	}
}

// TestCompactionPassesUnderFaults: the same through leader kills, with
// 3,000 keys and cleanings whose map holds about 950 of them
// (log_cleaner_dedupe_buffer_size 64 KiB), so that cleaning a partition's
// log takes several passes, each new leader mapping from where its own
// replica's cleanings left the log clean. Once the writes stop every key
// is stored once, and the checks of TestCompactionUnderFaults hold.
func TestCompactionPassesUnderFaults(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	c := startCluster(ctx, t, "--log-cleaner-backoff", "300ms", "--log-cleaner-dedupe-buffer-size", "65536")
	const topic = "compacted-passes"
	// Ratio 0: a last dirty tail may be under 1% of the log (10 records
	// were), which a ratio above 0 leaves uncleaned, as Kafka does.
	l := startCompactedLoad(ctx, t, c, topic, 2, map[string]string{"min.cleanable.dirty.ratio": "0", "segment.bytes": "1048576"},
		WorkloadConfig{Keys: 3000, Rate: 1000}, 6000)
	for i := range rounds(2, 4) {
		leaderKill(ctx, t, c, l.w, &l.h, l.sum, topic, int32(i%2))
		must(t, l.w.WaitAcked(ctx, -1, time.Now(), 4000))
	}
	stopWorkload(ctx, t, l.w)
	waitKeysOnce(ctx, t, c, topic)
	if v := l.verifyCompacted(ctx, t); v.Report.Superseded == 0 {
		t.Fatal("no acknowledged record was cleaned away")
	}
}

// startCompactedLoad creates topic with partitions of three replicas,
// cleanup.policy=compact and configs, starts w on it and waits until
// acked of its records are acknowledged.
func startCompactedLoad(ctx context.Context, t *testing.T, c *Cluster, topic string, partitions int32,
	configs map[string]string, w WorkloadConfig, acked int) *load {
	t.Helper()
	configs["cleanup.policy"] = "compact"
	must(t, c.CreateTopicWith(ctx, topic, partitions, 3, configs))
	l := &load{c: c, topic: topic, sum: scenarioSummary(t)}
	w.Topic = topic
	l.w = startWorkload(t, c, &l.h, w)
	must(t, l.w.WaitAcked(ctx, -1, time.Time{}, acked))
	return l
}

// waitKeysOnce waits until topic's partitions store each key once, and
// fails the test when they do not within a minute.
func waitKeysOnce(ctx context.Context, t *testing.T, c *Cluster, topic string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for twice := -1; twice != 0; {
		logs, err := c.ReadPartitions(ctx, topic)
		must(t, err)
		twice = 0
		for _, pl := range logs {
			seen := map[string]bool{}
			for _, r := range pl.Records {
				if seen[string(r.Key)] {
					twice++
				}
				seen[string(r.Key)] = true
			}
		}
		if twice > 0 && time.Now().After(deadline) {
			t.Fatalf("%d records of keys stored again later, a minute after the writes stopped", twice)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// verifyCompacted runs Cluster.VerifyCompacted on the load's topic and
// fails the test on any problem.
func (l *load) verifyCompacted(ctx context.Context, t *testing.T) *Verification {
	t.Helper()
	v, err := l.c.VerifyCompacted(ctx, l.h.Attempts(), l.topic)
	l.sum.Verified(v)
	if v != nil {
		t.Logf("verified: %v; %d acknowledged records superseded and cleaned away", v, v.Report.Superseded)
	}
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return v
}
