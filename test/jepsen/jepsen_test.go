package jepsen

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minikafka/minikafka-go/test/e2e"
	"github.com/minikafka/minikafka-go/test/jepsen/history"
)

const (
	topic      = "jepsen"
	partitions = 6
	workers    = 8
)

// runTime is JEPSEN_TIME (make jepsen), else the short run of make test.
func runTime(t *testing.T) time.Duration {
	s := os.Getenv("JEPSEN_TIME")
	if s == "" {
		return 45 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("JEPSEN_TIME=%q: %v", s, err)
	}
	return d
}

// targetEnv names the broker the workload runs against: unset for a
// partitionable cluster of minikafka-node processes under the nemesis,
// "kfake" for franz-go's in-process fake (no faults), a cross-check of
// the harness.
const targetEnv = "MINIKAFKA_JEPSEN_TARGET"

// TestJepsen runs the workload for JEPSEN_TIME under the nemesis, heals,
// reads everything back and checks the history: no anomaly may be found.
func TestJepsen(t *testing.T) {
	d := runTime(t)
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Minute)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("JEPSEN_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("JEPSEN_SEED=%d", seed)
	cfg := Config{Topic: topic, Partitions: partitions, Workers: workers, Seed: seed}
	var c *e2e.Cluster
	if os.Getenv(targetEnv) == "kfake" {
		kc, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(partitions, topic))
		if err != nil {
			t.Fatal(err)
		}
		defer kc.Close()
		cfg.Brokers = kc.ListenAddrs()
	} else {
		c = startCluster(ctx, t)
		cfg.Brokers = c.Seeds()
	}
	rec := NewRecorder()
	w, err := StartWorkload(cfg, rec)
	if err != nil {
		t.Fatal(err)
	}
	var nem *Nemesis
	if c != nil {
		nem = StartNemesis(c, topic, partitions, coordinatorKeys(), seed)
	}
	time.Sleep(d)
	w.Stop()
	var faults []Fault
	if nem != nil {
		var err error
		if faults, err = nem.Stop(); err != nil {
			t.Errorf("nemesis: %v", err)
		}
		// A fault starts every 6-12 s (2-4 s of calm, 2-5 s held, the heal):
		// far fewer means the nemesis stalled.
		if want := int(d / (20 * time.Second)); len(faults) < want {
			t.Errorf("the nemesis injected %d faults in %v, want at least %d", len(faults), d, want)
		}
		if err := c.StartAll(ctx, topic); err != nil {
			t.Fatalf("heal: %v", err)
		}
	}
	if err := FinalReads(ctx, cfg, rec); err != nil {
		t.Fatal(err)
	}
	ops := rec.Ops()
	res := history.Check(ops)
	report(t, faults, ops, res)
	if !res.Valid() {
		saveHistory(t, ops, seed)
	}
}

// saveHistory writes the history as JSON to JEPSEN_OUT (default the
// system's temp dir) for a look after the test's files are gone.
func saveHistory(t *testing.T, ops []history.Op, seed uint64) {
	dir := os.Getenv("JEPSEN_OUT")
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("jepsen-history-%d.json", seed))
	b, err := json.Marshal(ops)
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Logf("save the history: %v", err)
		return
	}
	t.Logf("history saved to %s", path)
}

// startCluster starts three partitionable nodes with the topic.
func startCluster(ctx context.Context, t *testing.T) *e2e.Cluster {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := e2e.Start(sctx, t, e2e.Options{Binary: nodeBinary, Partitionable: true})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	if err := c.CreateTopic(sctx, topic, partitions, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(sctx, topic); err != nil {
		t.Fatal(err)
	}
	return c
}

// coordinatorKeys are the groups and transactional ids of the workload.
func coordinatorKeys() []string {
	keys := []string{"group:" + subscribeGroup, "group:" + ctpGroup}
	for i := range workers {
		keys = append(keys, (&worker{id: i}).txnID())
	}
	return keys
}

// report logs the fault schedule, the operations' outcomes, the
// anomalies' examples and the summary, which it also prints as the
// output's last line; it fails the test on any anomaly.
func report(t *testing.T, faults []Fault, ops []history.Op, res *history.Result) {
	outcomes := map[string]int{}
	for _, op := range ops {
		outcomes[fmt.Sprintf("%s %s", op.Kind, op.Outcome)]++
	}
	t.Logf("operations by outcome: %v", outcomes)
	kinds := map[string]int{}
	var b strings.Builder
	for _, f := range faults {
		kinds[f.Kind]++
		fmt.Fprintf(&b, "  %s\n", f)
	}
	t.Logf("fault schedule (%d faults, by kind %v):\n%s", len(faults), kinds, b.String())
	names := make([]string, 0, len(res.Examples))
	for n := range res.Examples {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Errorf("%s: %d, e.g.\n  %s", n, res.Counts[n], strings.Join(res.Examples[n], "\n  "))
	}
	if len(res.Permitted) > 0 {
		t.Logf("cycles Kafka's transactions permit: %v", res.Permitted)
	}
	fmt.Println(res.Summary(len(faults)))
}

// TestCheckSavedHistory checks a history saveHistory wrote, named by
// JEPSEN_HISTORY: a checker change can be tried on a failing run's
// history without running it again.
func TestCheckSavedHistory(t *testing.T) {
	path := os.Getenv("JEPSEN_HISTORY")
	if path == "" {
		t.Skip("JEPSEN_HISTORY names no saved history")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ops []history.Op
	if err := json.Unmarshal(b, &ops); err != nil {
		t.Fatal(err)
	}
	report(t, nil, ops, history.Check(ops))
}
