package e2e

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/multiraft"
)

// cachingStores are the raft.log_store values whose partitions can
// acknowledge before fsync; on the others write caching falls back to
// fsync on commit.
var cachingStores = []string{"pebble"}

// refusalLog is what a node logs when a replica's store refuses to cache.
const refusalLog = "write caching asked for, but"

// writeCachingStore is the raft.log_store of the write-caching scenario:
// MINIKAFKA_E2E_LOG_STORE if set; else pebble if this build has it; else
// boltdb, which always fsyncs, so that the scenario still checks the
// harness and the fallback.
func writeCachingStore(t *testing.T) string {
	if s := os.Getenv("MINIKAFKA_E2E_LOG_STORE"); s != "" {
		return s
	}
	if _, err := multiraft.ParseLogStore("pebble"); err == nil {
		return "pebble"
	}
	t.Log("raft.log_store pebble is not in this build: write caching runs on boltdb, which fsyncs on commit")
	return string(multiraft.LogStoreBoltDB)
}

// TestWriteCachingKill kills -9 a partition leader and then a follower
// while producers write to a topic with write.caching=true, and proves
// that nothing acknowledged is lost or duplicated and the replicas end
// identical: a process crash loses nothing a majority acknowledged from
// memory, since the OS keeps what the process wrote.
func TestWriteCachingKill(t *testing.T) {
	store := writeCachingStore(t)
	ctx := testContext(t, 3*time.Minute)
	c := startCluster(ctx, t, "--raft-log-store", store, "--log-flush-interval-ms", "100")
	const topic = "cached"
	// Created here with its config; startLoad then finds it and only
	// starts the load.
	must(t, c.CreateTopicWith(ctx, topic, 2, 3, map[string]string{"write.caching": "true"}))
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 2, 100)
	checkWriteCachingMode(ctx, t, c, store)
	for i := range rounds(1, 3) {
		p := int32(i % 2)
		leaderKill(ctx, t, c, l.w, &l.h, l.sum, topic, p)
		followerKill(ctx, t, c, l.w, l.sum, topic, p)
	}
	must(t, l.w.WaitAcked(ctx, -1, time.Now(), 100))
	l.finish(ctx, t)
}

// checkWriteCachingMode checks in the nodes' logs that every node's
// replicas were asked to cache: on a store that cannot, each node logs
// the refusal; on one that can, none does.
func checkWriteCachingMode(ctx context.Context, t *testing.T, c *Cluster, store string) {
	t.Helper()
	for id := 1; id <= NodeCount; id++ {
		logged := func() bool {
			b, err := os.ReadFile(c.Node(id).LogFile)
			return err == nil && bytes.Contains(b, []byte(refusalLog))
		}
		if slices.Contains(cachingStores, store) {
			if logged() {
				t.Fatalf("node %d: the %s store refused write caching:\n%s", id, store, c.LogTail(id, 20))
			}
			continue
		}
		must(t, poll(ctx, "node logs the fallback to fsync on commit", func() (bool, error) { return logged(), nil }))
	}
}

// followerKill kills -9 a node that does not lead topic/p (one that leads
// none of topic's partitions if there is one), checks that every
// partition goes on acknowledging without it, and restarts it.
func followerKill(ctx context.Context, t *testing.T, c *Cluster, w *Workload, sum *Summary, topic string, p int32) {
	t.Helper()
	ls, err := c.Leaders(ctx, topic)
	must(t, err)
	victim := otherNode(ls[p].Node)
	for id := 1; id <= NodeCount; id++ {
		if len(ledBy(ls, id)) == 0 {
			victim = id
			break
		}
	}
	t0 := time.Now()
	must(t, c.Kill(victim))
	sum.Fault("follower-kill")
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for q := range ls {
		if err := w.WaitAcked(fctx, int32(q), t0, 20); err != nil {
			t.Fatalf("%s[%d] stopped acknowledging after killing follower %d: %v", topic, q, victim, err)
		}
	}
	t.Logf("killed follower %d of %s (leaders %v); every partition went on acknowledging", victim, topic, ls)
	must(t, c.StartNode(ctx, victim))
	heal(ctx, t, c, w, topic)
}
