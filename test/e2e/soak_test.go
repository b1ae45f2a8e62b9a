package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompactionSoak (make soak-compaction, MINIKAFKA_SOAK_TIME=30m): a
// key-churn workload (two idempotent producers over 100 keys, 400
// records/s each) on a compacted topic for the soak time, with the disk
// each node uses for the topic's replicas sampled every 30 s. The disk
// must stay flat: after the first tenth of the run (at least its first two
// samples, while segments, Raft logs and snapshots fill up), no sample may
// exceed twice the largest of that first tenth. Then the usual
// compacted verification (CheckCompacted, replicas byte-identical).
func TestCompactionSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("MINIKAFKA_SOAK_TIME"))
	if err != nil {
		t.Skip("a soak: MINIKAFKA_SOAK_TIME=30m (make soak-compaction)")
	}
	ctx := testContext(t, d+5*time.Minute)
	c := startCluster(ctx, t, "--log-cleaner-backoff", "2s")
	const topic = "churn"
	must(t, c.CreateTopicWith(ctx, topic, 3, 3, map[string]string{"cleanup.policy": "compact", "segment.bytes": "1048576"}))
	l := &load{c: c, topic: topic, sum: scenarioSummary(t)}
	l.w = startWorkload(t, c, &l.h, WorkloadConfig{Topic: topic, Keys: 100, Rate: 400, Pad: 200})
	start := time.Now()
	var samples []int64
	for tick := time.NewTicker(30 * time.Second); time.Since(start) < d; {
		<-tick.C
		n := topicBytes(t, c, topic)
		samples = append(samples, n)
		t.Logf("%6.0fs  %8d bytes on disk for %s (all nodes)", time.Since(start).Seconds(), n, topic)
	}
	stopWorkload(ctx, t, l.w)
	warm := max(2, len(samples)/10)
	var first int64
	for _, s := range samples[:warm] {
		first = max(first, s)
	}
	for i, s := range samples[warm:] {
		if s > 2*first {
			t.Errorf("sample %d: %d bytes, over twice the %d of the first tenth: the disk grows", warm+i, s, first)
		}
	}
	v, err := c.VerifyCompacted(ctx, l.h.Attempts(), topic)
	l.sum.Verified(v)
	if v != nil {
		t.Logf("verified: %v; %d acknowledged records superseded and cleaned away", v, v.Report.Superseded)
	}
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	t.Logf("soak: %v, %d samples, first tenth's peak %d bytes, last %d bytes, %d records acknowledged",
		d, len(samples), first, samples[len(samples)-1], v.Report.Acked)
}

// topicBytes is the size of the files of topic's replicas on every node.
func topicBytes(t *testing.T, c *Cluster, topic string) int64 {
	t.Helper()
	var n int64
	for id := 1; id <= NodeCount; id++ {
		root := filepath.Join(c.Node(id).DataDir, "partitions")
		err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil // a file removed while walking
			}
			rel, _ := filepath.Rel(root, path)
			if e.Type().IsRegular() && strings.HasPrefix(rel, topic+"-") {
				if info, err := e.Info(); err == nil {
					n += info.Size()
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(fmt.Errorf("e2e: size of %s: %w", root, err))
		}
	}
	return n
}
