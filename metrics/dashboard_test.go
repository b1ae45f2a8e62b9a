package metrics_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardFile and alertsFile are the shipped Grafana dashboard and
// Prometheus rules, relative to this package.
var (
	dashboardFile = filepath.Join("..", "configs", "grafana", "minikafka.json")
	alertsFile    = filepath.Join("..", "configs", "prometheus", "alerts.yml")
)

// metricName matches a MiniKafka metric name in PromQL or prose;
// recording rules (minikafka:...) do not match.
var metricName = regexp.MustCompile(`\bminikafka_[a-z0-9_]*[a-z0-9]`)

// knownMetrics are the names the node exposes: those documented in
// docs/metrics.md's table and those declared in metrics/collector.go.
func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	doc := readFile(t, filepath.Join("..", "docs", "metrics.md"))
	for _, m := range regexp.MustCompile("(?m)^\\| `(minikafka_[a-z0-9_]+)` \\|").FindAllStringSubmatch(doc, -1) {
		known[m[1]] = true
	}
	src := readFile(t, "collector.go")
	for _, m := range regexp.MustCompile(`desc\("([a-z0-9_]+)"`).FindAllStringSubmatch(src, -1) {
		known["minikafka_"+m[1]] = true
	}
	if len(known) < 30 {
		t.Fatalf("found only %d metric names in docs/metrics.md and collector.go: has their format changed?", len(known))
	}
	return known
}

// unknownMetrics are the names in used that the node does not expose; a
// histogram's _bucket, _sum and _count series count as its name.
func unknownMetrics(used []string, known map[string]bool) []string {
	var bad []string
	for _, n := range used {
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok && known[b] {
				base = b
			}
		}
		if !known[base] && !slices.Contains(bad, n) {
			bad = append(bad, n)
		}
	}
	return bad
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dashboard is what the test reads of a Grafana dashboard.
type dashboard struct {
	Title, UID string
	Templating struct {
		List []struct {
			Name  string
			Query json.RawMessage // a string or, in newer Grafanas, an object
		}
	}
	Panels []panel
}

type panel struct {
	ID      int
	Type    string
	Title   string
	GridPos struct{ H, W, X, Y int }
	Targets []struct {
		Expr, RefID string
	}
	Panels []panel // a collapsed row's panels
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal([]byte(readFile(t, dashboardFile)), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// TestDashboardUsesOnlyExposedMetrics: the Grafana dashboard parses, its
// panels are well formed (unique ids, on the 24-column grid, a query
// each), and every metric its queries (and its variables') use is one the
// node exposes, so a
// renamed metric breaks this test instead of a panel. It also shows every
// metric the alerting rules use.
func TestDashboardUsesOnlyExposedMetrics(t *testing.T) {
	d := loadDashboard(t)
	known := knownMetrics(t)
	if d.Title == "" || d.UID == "" {
		t.Fatalf("dashboard without title or uid: %q %q", d.Title, d.UID)
	}
	var used []string
	ids := map[int]string{}
	for _, p := range allPanels(d.Panels) {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Title == "" || p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d %q: no title or off the grid (%+v)", p.ID, p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			names := metricName.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %s uses no minikafka metric", p.Title, q.RefID)
			}
			used = append(used, names...)
		}
	}
	for _, v := range d.Templating.List {
		used = append(used, metricName.FindAllString(string(v.Query), -1)...)
	}
	if bad := unknownMetrics(used, known); len(bad) > 0 {
		t.Errorf("%s uses metrics the node does not expose (not in docs/metrics.md or collector.go): %v", dashboardFile, bad)
	}
	alerted := metricName.FindAllString(readFile(t, alertsFile), -1)
	slices.Sort(alerted)
	for _, n := range slices.Compact(alerted) {
		if !slices.Contains(used, n) && !slices.Contains(used, n+"_bucket") {
			t.Errorf("%s alerts on %s, which no panel of the dashboard shows", alertsFile, n)
		}
	}
}

// TestAlertRulesUseOnlyExposedMetrics: every metric named in alerts.yml,
// in an expression or a description, is one the node exposes.
func TestAlertRulesUseOnlyExposedMetrics(t *testing.T) {
	used := metricName.FindAllString(readFile(t, alertsFile), -1)
	if len(used) < 10 {
		t.Fatalf("only %d metric names in %s", len(used), alertsFile)
	}
	if bad := unknownMetrics(used, knownMetrics(t)); len(bad) > 0 {
		t.Errorf("%s uses metrics the node does not expose (not in docs/metrics.md or collector.go): %v", alertsFile, bad)
	}
}

// TestDashboardQueriesParse: promtool accepts every dashboard query as
// PromQL, with Grafana's variables replaced by values Prometheus knows.
func TestDashboardQueriesParse(t *testing.T) {
	promtool := needTool(t, "promtool", "prometheus")
	d := loadDashboard(t)
	vars := strings.NewReplacer(`$__rate_interval`, "1m", `$job`, ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range allPanels(d.Panels) {
		for _, q := range p.Targets {
			n++
			expr, err := json.Marshal(vars.Replace(q.Expr)) // a JSON string is a YAML string
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&rules, "      - record: dashboard:query_%d\n        expr: %s\n", n, expr)
		}
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, rules.String())
	}
	if want := fmt.Sprintf("SUCCESS: %d rules found", n); !strings.Contains(string(out), want) {
		t.Fatalf("promtool check rules: want %q in\n%s", want, out)
	}
}
