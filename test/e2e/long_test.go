package e2e

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// minLongFaults is the fewest faults TestLongFailover injects; override
// with MINIKAFKA_E2E_FAULTS.
const minLongFaults = 50

// TestLongFailover is the long run (make e2e, MINIKAFKA_E2E_LONG=1): one
// cluster under steady load suffers at least 50 faults of every kind in
// turn (leader kill -9, paused leader, follower kept down past a snapshot,
// rolling restart, whole-cluster kill -9), healing after each; then every
// acknowledged record must be present exactly once at its offset and
// every replica byte-identical.
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
	ctx := testContext(t, 25*time.Minute)
	c := startCluster(ctx, t, snapshotArgs...)
	const topic = "long"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic, Producers: 3}, 3, 100)
	w, h, sum := l.w, &l.h, l.sum

	pauses := int64(0)
	steps := []func(round int){
		func(r int) { leaderKill(ctx, t, c, w, h, sum, topic, int32(r%3)) },
		func(r int) { leaderKill(ctx, t, c, w, h, sum, topic, int32((r+1)%3)) },
		func(r int) {
			pauseLeader(ctx, t, c, w, h, sum, topic, int32(r%3), pauses)
			pauses++
		},
		func(r int) { leaderKill(ctx, t, c, w, h, sum, topic, int32((r+2)%3)) },
		func(r int) { followerCatchUp(ctx, t, c, w, sum, topic, int32(r%3)) },
		func(r int) { leaderKill(ctx, t, c, w, h, sum, topic, int32(r%3)) },
		func(int) { rollingRestart(ctx, t, c, w, sum, topic) },
		func(r int) { leaderKill(ctx, t, c, w, h, sum, topic, int32((r+1)%3)) },
		func(int) { clusterKill(ctx, t, c, w, sum, topic) },
	}
	start := time.Now()
	for r := 0; sum.Faults() < want; r++ {
		steps[r%len(steps)](r)
		if r%len(steps) == len(steps)-1 {
			t.Logf("%d faults after %v", sum.Faults(), time.Since(start).Round(time.Second))
		}
	}
	must(t, w.WaitAcked(ctx, -1, time.Now(), 100))
	stopWorkload(ctx, t, w)
	vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	verify(vctx, t, c, h, sum, topic)
	if sum.Faults() < want {
		t.Fatalf("%d faults injected, want at least %d", sum.Faults(), want)
	}
}
