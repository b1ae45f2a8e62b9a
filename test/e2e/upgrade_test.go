package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// olderBuild is the last build that landed before the cleanings of a
// dirty part (fsm's 40-byte clean command), which its nodes refuse.
const olderBuild = "93888b75e7450e5dd683fb7c86d988e85d77a553"

// TestRollingUpgradeWithCompaction: a cluster of the older build serving
// a compacted topic has one node upgraded under writes, with leadership
// going back to each preferred replica within a second, so that the
// upgraded node leads a partition while older ones follow. Once every key
// is stored once, nothing acknowledged is lost and the replicas are
// byte-identical; again once all three run this build. Before,
// the upgraded leader proposed cleanings the older nodes refused, and
// their replicas kept what its own cleaned away.
func TestRollingUpgradeWithCompaction(t *testing.T) {
	ctx := testContext(t, 6*time.Minute)
	older := buildOlder(ctx, t)
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := Start(sctx, t, Options{Binary: older,
		Args: []string{"--log-cleaner-backoff", "300ms", "--leader-rebalance-interval", "1s"}})
	if err != nil {
		t.Fatalf("start cluster of the older build: %v", err)
	}
	const topic = "upgraded"
	l := startCompactedLoad(ctx, t, c, topic, 3, map[string]string{"min.cleanable.dirty.ratio": "0", "segment.bytes": "1048576"},
		WorkloadConfig{Keys: 500, Rate: 1000}, 3000)
	c.SetBinary(3, nodeBinary)
	must(t, c.RestartNode(ctx, 3, topic))
	must(t, l.w.WaitAcked(ctx, -1, time.Now(), 6000)) // cleanings led by the upgraded node
	stopWorkload(ctx, t, l.w)
	waitKeysOnce(ctx, t, c, topic)
	if v := l.verifyCompacted(ctx, t); v.Report.Superseded == 0 {
		t.Fatal("no acknowledged record was cleaned away")
	}
	c.SetBinary(2, nodeBinary) // the check stopped every node
	c.SetBinary(1, nodeBinary)
	must(t, c.StartAll(ctx, topic))
	l.verifyCompacted(ctx, t)
}

// buildOlder builds cmd/node of olderBuild from this clone's history,
// and skips the test when the clone does not hold that commit.
func buildOlder(ctx context.Context, t *testing.T) string {
	t.Helper()
	root, err := ModuleRoot()
	must(t, err)
	if err := exec.CommandContext(ctx, "git", "-C", root, "cat-file", "-e", olderBuild+"^{commit}").Run(); err != nil {
		t.Skipf("this clone does not hold commit %s of the older build: %v", olderBuild, err)
	}
	src := t.TempDir()
	tar := filepath.Join(src, "src.tar")
	for _, cmd := range []*exec.Cmd{
		exec.CommandContext(ctx, "git", "-C", root, "archive", "-o", tar, olderBuild),
		exec.CommandContext(ctx, "tar", "-xf", tar, "-C", src),
	} {
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("unpack the older build: %v: %v\n%s", cmd.Args, err, out)
		}
	}
	bin, err := BuildIn(ctx, src, src, "./cmd/node", "minikafka-node-older")
	must(t, err)
	return bin
}
