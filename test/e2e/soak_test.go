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
// the topic's replicas use, and the nodes' whole data directories (Raft
// logs but Pebble's recycled WAL files, internal topics), sampled every
// 30 s. The disk must stay flat (requireFlat). Then the usual
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
	var topicSamples, nodeSamples []int64
	for tick := time.NewTicker(30 * time.Second); time.Since(start) < d; {
		<-tick.C
		tb, nb := dataBytes(t, c, topic+"-"), dataBytes(t, c, "")
		topicSamples, nodeSamples = append(topicSamples, tb), append(nodeSamples, nb)
		t.Logf("%6.0fs  %10d bytes on disk for %s, %10d for the nodes' whole data (all nodes)", time.Since(start).Seconds(), tb, topic, nb)
	}
	stopWorkload(ctx, t, l.w)
	first := requireFlat(t, topic, topicSamples)
	requireFlat(t, "the nodes' data", nodeSamples)
	v := l.verifyCompacted(ctx, t)
	t.Logf("soak: %v, %d samples, first half's peak %d bytes for %s, last %d bytes, %d records acknowledged",
		d, len(topicSamples), first, topic, topicSamples[len(topicSamples)-1], v.Report.Acked)
}

// requireFlat fails the test if the peak of the second half of the
// samples passes 1.5 times the peak of the first half, which a disk that
// grows with time does (linear growth doubles it) and one bounded by its
// cleanings, journal rotations and Raft log compactions, all of which
// cycle within the first half, does not. It returns the first half's
// peak.
func requireFlat(t *testing.T, what string, samples []int64) int64 {
	t.Helper()
	half := len(samples) / 2
	var first, second int64
	for i, s := range samples {
		if i < half {
			first = max(first, s)
		} else {
			second = max(second, s)
		}
	}
	if 2*second > 3*first {
		t.Errorf("%s: the second half's peak %d bytes is over 1.5 times the first half's %d: the disk grows", what, second, first)
	}
	return first
}

// dataBytes is the size of the files on every node's data directory
// whose path below it starts with prefix ("" for all, "<topic>-" for a
// topic's replicas, under partitions/). Pebble's write-ahead logs
// (raftlog/*.log) are left out: Pebble preallocates each to its memtable's
// size and keeps up to MemTableStopWritesThreshold+1 of them for reuse
// (multiraft/pebblelog.go), a bound of its own that a 30-minute run
// approaches from below.
func dataBytes(t *testing.T, c *Cluster, prefix string) int64 {
	t.Helper()
	var n int64
	for id := 1; id <= NodeCount; id++ {
		root := c.Node(id).DataDir
		if prefix != "" {
			root = filepath.Join(root, "partitions")
		}
		err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil // a file removed while walking
			}
			rel, _ := filepath.Rel(root, path)
			wal := strings.HasPrefix(rel, "raftlog"+string(filepath.Separator)) && strings.HasSuffix(rel, ".log")
			if e.Type().IsRegular() && strings.HasPrefix(rel, prefix) && !wal {
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
