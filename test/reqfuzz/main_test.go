package reqfuzz

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/test/e2e"
)

// nodeBinary is the minikafka-node built by TestMain.
var nodeBinary string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "minikafka-reqfuzz-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	nodeBinary, err = e2e.BuildNode(ctx, dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			return 1
		}
	}
	return code
}

// writeConfigs writes node1..N.yaml into dir: a cluster of n nodes that
// auto-creates topics (so that generated names reach creation), bounded
// to 300 partitions in all (each a Raft group on a small machine), with
// small internal topics, 64 MiB per partition at most (the reference
// topic keeps everything: RefConfigs) and quiet logs.
func writeConfigs(dir string, n int) error {
	for id := 1; id <= n; id++ {
		cfg := fmt.Sprintf(`# A node of the request fuzzer's cluster (test/reqfuzz).
node_id: %d
data_dir: ./data/node%d
kafka_addr: 127.0.0.1:0
raft_addr: 127.0.0.1:0
gossip_addr: 127.0.0.1:0
bootstrap_expect: %d
default_partitions: 1
default_replication_factor: %d
auto_create_topics: true
max_partitions: 300
offsets_topic_partitions: 3
transaction_state_partitions: 3
share_state_partitions: 3
segment_bytes: 16777216
log_retention_bytes: 67108864
# The leaders' periodic duties run every few seconds, so that even a short
# run sends its requests while they run (producer expiry forgot the
# reference producer only at its first check, 10 minutes into make fuzz).
producer_id_expiration_check_interval: 5s
offsets_retention_check_interval: 5s
transaction_remove_expired_interval: 5s
transaction_pending_offsets_check_interval: 5s
log_retention_check_interval: 5s
log_level: %s
%s`, id, id, n, n, logLevel(), debugAddr(id))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("node%d.yaml", id)), []byte(cfg), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// logLevel is the nodes' log level: REQFUZZ_LOG_LEVEL, or warn.
func logLevel() string {
	if l := os.Getenv("REQFUZZ_LOG_LEVEL"); l != "" {
		return l
	}
	return "warn"
}

// debugPortBase is REQFUZZ_DEBUG_PORT_BASE: when set, node N serves
// Go's /debug/pprof on 127.0.0.1:<base+N>, and a node over the memory
// bound has its heap profile saved next to the failing round.
func debugPortBase() int {
	n, _ := strconv.Atoi(os.Getenv("REQFUZZ_DEBUG_PORT_BASE"))
	return n
}

// debugAddr is node id's debug_addr line, or "".
func debugAddr(id int) string {
	if base := debugPortBase(); base > 0 {
		return fmt.Sprintf("debug_addr: 127.0.0.1:%d\n", base+id)
	}
	return ""
}

// saveHeap saves node id's heap profile into dir, if it serves pprof.
func saveHeap(t *testing.T, dir string, id int) {
	base := debugPortBase()
	if base == 0 {
		return
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", base+id))
	if err != nil {
		t.Logf("reqfuzz: heap profile of node %d: %v", id, err)
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	path := filepath.Join(dir, fmt.Sprintf("node%d-%s.heap", id, time.Now().Format("150405")))
	if err == nil {
		err = os.MkdirAll(dir, 0o755) // a run's first finding may come before anything else is saved
	}
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Logf("reqfuzz: heap profile of node %d: %v", id, err)
		return
	}
	t.Logf("reqfuzz: node %d's heap profile: %s (go tool pprof -top %s)", id, path, path)
}

// harness is a cluster of node processes, its reference topic and a
// Runner against it.
type harness struct {
	c      *e2e.Cluster
	runner *Runner
}

// startHarness starts n nodes, creates the reference topic and the fuzz
// topics, writes the reference records and makes a Runner.
func startHarness(ctx context.Context, t *testing.T, n int, cfg Config) *harness {
	t.Helper()
	dir := t.TempDir()
	must(t, writeConfigs(dir, n))
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := e2e.Start(sctx, t, e2e.Options{Binary: nodeBinary, ConfigDir: dir, Nodes: n})
	must(t, err)
	must(t, c.CreateTopicWith(sctx, RefTopic, RefPartitions, int16(n), RefConfigs))
	for _, topic := range topicNames[:3] {
		must(t, c.CreateTopic(sctx, topic, 2, int16(n)))
	}
	ref, err := NewReference(sctx, c.Seeds())
	must(t, err)
	for id := 1; id <= n; id++ {
		cfg.Targets = append(cfg.Targets, Target{
			ID:      id,
			Addr:    c.Node(id).KafkaAddr,
			Pid:     func() (int, error) { return c.Pid(id) },
			LogTail: func(lines int) string { return c.LogTail(id, lines) },
			LogFile: c.Node(id).LogFile,
			Kill:    func() error { return c.Kill(id) },
			Restart: func(ctx context.Context) error {
				if err := c.StartNode(ctx, id); err != nil {
					return err
				}
				return c.WaitReady(ctx, RefTopic)
			},
		})
	}
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	r, err := NewRunner(sctx, cfg, ref)
	must(t, err)
	return &harness{c: c, runner: r}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// seedFromEnv is REQFUZZ_SEED, def if it is unset, or a new seed if
// def is 0 or REQFUZZ_SEED is "new".
func seedFromEnv(t *testing.T, def uint64) uint64 {
	t.Helper()
	s := os.Getenv("REQFUZZ_SEED")
	switch {
	case s == "new" || s == "" && def == 0:
		return uint64(time.Now().UnixNano())
	case s == "":
		return def
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("REQFUZZ_SEED: %v", err)
	}
	return seed
}

// envDuration is the duration in env variable name, or def.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// rssBound is REQFUZZ_RSS_MIB in bytes, by default 1.5 GiB: a node
// serving 4 connections of 25 pipelined requests of up to 10 MiB each
// (all in flight at once: max in flight is 32) was seen to peak at
// 800 MiB; a leak or a request whose cost is far above its size passes
// the bound.
func rssBound(t *testing.T) int64 {
	t.Helper()
	mib := int64(1536)
	if s := os.Getenv("REQFUZZ_RSS_MIB"); s != "" {
		var err error
		if mib, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("REQFUZZ_RSS_MIB: %v", err)
		}
	}
	return mib << 20
}

// outDir is where failing rounds are saved: REQFUZZ_OUT, or reqfuzz
// under the system's temporary directory (kept after the test).
func outDir() string {
	if d := os.Getenv("REQFUZZ_OUT"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "reqfuzz")
}
