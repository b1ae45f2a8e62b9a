package e2e

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// minLongFaults is the fewest faults TestLongFailover injects; override
// with MINIKAFKA_E2E_FAULTS.
const minLongFaults = 50

// minLongPartitions is the fewest network partitions among them.
const minLongPartitions = 30

// TestLongFailover is the long run (make e2e, MINIKAFKA_E2E_LONG=1): one
// cluster under steady load suffers at least 50 faults of every kind in
// turn (leader kill -9, paused leader, follower kept down past a snapshot,
// rolling restart, whole-cluster kill -9, and at least 30 network
// partitions of every scenario of partition_test.go), healing after each;
// then every acknowledged record must be present exactly once at its
// offset, no consumer may have read a record later lost, no Metadata
// answer may have named two leaders with one epoch, and every replica
// must be byte-identical.
func TestLongFailover(t *testing.T) {
	if !longRun() {
		t.Skip("the long run: MINIKAFKA_E2E_LONG=1 (make e2e)")
	}
	want := minLongFaults
	if s := os.Getenv("MINIKAFKA_E2E_FAULTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("MINIKAFKA_E2E_FAULTS=%q: not a positive number", s)
		}
		want = n
	}
	ctx := testContext(t, 40*time.Minute)
	const topic = "long"
	r := startPartitionRun(ctx, t, topic, 3, snapshotArgs...)
	c, w, h, sum := r.c, r.w, &r.h, r.sum

	pauses := int64(0)
	steps := []func(round int){
		func(r int) { leaderKill(ctx, t, c, w, h, sum, topic, int32(r%3)) },
		func(q int) { partitionLeader(ctx, t, r, isolateLeader, int32(q%3)) },
		func(r int) { leaderKill(ctx, t, c, w, h, sum, topic, int32((r+1)%3)) },
		func(q int) { partitionLeader(ctx, t, r, oneWayOut, int32((q+1)%3)) },
		func(r int) {
			pauseLeader(ctx, t, c, w, h, sum, topic, int32(r%3), pauses)
			pauses++
		},
		func(q int) { partitionLeader(ctx, t, r, raftOnly, int32((q+2)%3)) },
		func(r int) { leaderKill(ctx, t, c, w, h, sum, topic, int32((r+2)%3)) },
		func(q int) { partitionLeader(ctx, t, r, oneWayIn, int32(q%3)) },
		func(r int) { followerCatchUp(ctx, t, c, w, sum, topic, int32(r%3)) },
		func(q int) { partitionLeader(ctx, t, r, gossipOnly, int32((q+1)%3)) },
		func(r int) { leaderKill(ctx, t, c, w, h, sum, topic, int32(r%3)) },
		func(int) { isolateController(ctx, t, r) },
		func(int) { rollingRestart(ctx, t, c, w, sum, topic) },
		func(q int) { partitionLeader(ctx, t, r, healInElection, int32((q+2)%3)) },
		func(r int) { leaderKill(ctx, t, c, w, h, sum, topic, int32((r+1)%3)) },
		func(int) { movingSplit(ctx, t, r, rounds(3, 6)) },
		func(int) { clusterKill(ctx, t, c, w, sum, topic) },
	}
	start := time.Now()
	for i := 0; sum.Faults() < want || sum.PartitionFaults() < minLongPartitions; i++ {
		steps[i%len(steps)](i)
		if i%len(steps) == len(steps)-1 {
			t.Logf("%d faults (%d partitions) after %v", sum.Faults(), sum.PartitionFaults(), time.Since(start).Round(time.Second))
		}
	}
	r.finish(ctx, t)
	if sum.Faults() < want || sum.PartitionFaults() < minLongPartitions {
		t.Fatalf("%d faults injected (%d partitions), want at least %d (%d)", sum.Faults(), sum.PartitionFaults(), want, minLongPartitions)
	}
}
