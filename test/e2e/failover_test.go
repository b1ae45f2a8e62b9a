package e2e

import (
	"testing"
	"time"
)

// TestLeaderKillUnderLoad kills -9 a partition leader while producers
// write, again and again (each time a different partition's), and proves
// nothing acknowledged is lost or duplicated and the replicas end
// identical.
func TestLeaderKillUnderLoad(t *testing.T) {
	kills := rounds(3, 12)
	ctx := testContext(t, 4*time.Minute)
	c := startCluster(ctx, t)
	const topic = "kills"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 3, 100)
	w, h, sum := l.w, &l.h, l.sum
	for i := range kills {
		leaderKill(ctx, t, c, w, h, sum, topic, int32(i%3))
	}
	must(t, w.WaitAcked(ctx, -1, time.Now(), 100))
	l.finish(ctx, t)
	if got := len(sum.Failovers()); got != kills {
		t.Fatalf("%d failover times for %d kills", got, kills)
	}
}
