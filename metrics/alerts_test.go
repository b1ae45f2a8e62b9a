package metrics_test

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The alerting rules of configs/prometheus pass promtool's checks and its
// unit tests: alerts_test.yml makes each alert (broker down, offline and
// under-replicated partitions, leader imbalance, growing consumer lag,
// disk low or full, storage error, log write stalls, node not ready,
// request panics) fire on a synthetic series and stay quiet on a healthy
// one and on a near miss.
func TestAlertRules(t *testing.T) {
	promtool := needTool(t, "promtool", "prometheus")
	dir := filepath.Join("..", "configs", "prometheus")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
