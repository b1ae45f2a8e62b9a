package metrics_test

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The alerting rules of configs/prometheus pass promtool's checks and its
// unit tests (alerts_test.yml: a node that fills up raises the low-space
// warning, then the produce-refused alert).
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
