package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDiskFull is the acceptance of the data disk's reserve, against real
// node processes whose data directories are small tmpfs mounts. Each
// round alternates 1 KiB and 16 KiB records and:
//
//  1. produces to a partition until it refuses with KAFKA_STORAGE_ERROR;
//  2. finds every node running and every acknowledged record readable;
//  3. restarts every node on its full disk, and reads again;
//  4. deletes the records (DeleteRecords), after which produce resumes
//     without a restart;
//  5. fills the disks again, grows them by half, after which produce
//     resumes; reads everything back; deletes and shrinks them back.
//
// The short version: 2 rounds, one node, 32 MiB. With MINIKAFKA_E2E_LONG=1
// (make e2e) or MINIKAFKA_DISKFULL_ROUNDS=n: n rounds (10 by default) on
// 32 and 128 MiB disks, one node and three. It needs root to mount; the
// reserve itself is tested without root in package broker
// (TestNodeRefusesProduceBelowReserve, TestNodeRaftLogDiskFull).
func TestDiskFull(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounts a tmpfs as each node's data disk, which needs root; " +
			"broker's TestNodeRefusesProduceBelowReserve covers the reserve without it")
	}
	n, sizes, clusters := 2, []int64{32 << 20}, []int{1}
	if s := os.Getenv("MINIKAFKA_DISKFULL_ROUNDS"); s != "" || longRun() {
		n, sizes, clusters = 10, []int64{32 << 20, 128 << 20}, []int{1, 3}
		if s != "" {
			v, err := strconv.Atoi(s)
			must(t, err)
			n = v
		}
	}
	var report []string
	for _, nodes := range clusters {
		for _, size := range sizes {
			t.Run(fmt.Sprintf("nodes=%d/disk=%dMiB", nodes, size>>20), func(t *testing.T) {
				report = append(report, runDiskFull(t, nodes, size, n)...)
			})
		}
	}
	t.Logf("disk used per acknowledged byte when produce was refused (per replica):\n"+
		"| nodes | disk | round | record | acknowledged MiB | disk used MiB | used/acked |\n|---|---|---|---|---|---|---|\n%s",
		strings.Join(report, "\n"))
}

// runDiskFull runs rounds on a fresh cluster of nodes with disks of size
// bytes and returns a table row per round.
func runDiskFull(t *testing.T, nodes int, size int64, rounds int) []string {
	ctx := testContext(t, time.Duration(rounds)*8*time.Minute)
	opts := Options{Binary: nodeBinary, Nodes: nodes, PrepareDataDir: func(n *Node) error {
		if err := MountTmpfs(n.DataDir, size); err != nil {
			return err
		}
		dir := n.DataDir
		t.Cleanup(func() { _ = UnmountTmpfs(dir) }) // after the cluster's cleanup, which kills the node
		return nil
	}}
	if nodes == 1 {
		opts.Config = singleNodeConfig
	}
	c, err := Start(ctx, t, opts)
	must(t, err)
	const topic = "fill"
	must(t, c.CreateTopic(ctx, topic, 1, int16(nodes)))
	f, err := NewFiller(ctx, c, topic, 1<<10, 64)
	must(t, err)
	defer f.Close()
	resize := func(to int64) error {
		for _, id := range c.Running() {
			if err := ResizeTmpfs(c.Node(id).DataDir, to); err != nil {
				return err
			}
		}
		return nil
	}
	var rows []string
	for round := range rounds {
		valueSize := []int{1 << 10, 16 << 10}[round%2]
		f.SetRecordSize(valueSize, 64<<10/valueSize)
		step := func(what string, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, what, err)
			}
			if missing := nodes - len(c.Running()); missing > 0 {
				t.Fatalf("round %d, %s: %d node(s) exited", round, what, missing)
			}
			t.Logf("round %d: %s", round, what)
		}
		step("filled until refused", within(ctx, 5*time.Minute, f.FillUntilRefused))
		t.Logf("round %d: %.1f MiB acknowledged", round, float64(f.AckedBytes)/(1<<20))
		var used int64
		for _, id := range c.Running() {
			u, _, err := DiskUsed(c.Node(id).DataDir)
			must(t, err)
			used += u
		}
		used /= int64(nodes)
		rows = append(rows, fmt.Sprintf("| %d | %d MiB | %d | %d KiB | %.1f | %.1f | %.2f |", nodes, size>>20, round,
			valueSize>>10, float64(f.AckedBytes)/(1<<20), float64(used)/(1<<20), float64(used)/float64(max(f.AckedBytes, 1))))
		step("read back on a full disk", within(ctx, 2*time.Minute, f.ReadBack))
		for _, id := range c.Running() {
			step(fmt.Sprintf("node %d restarted on a full disk", id), c.RestartNode(ctx, id, topic))
		}
		step("read back after the restarts", within(ctx, 2*time.Minute, f.ReadBack))
		step("DeleteRecords", within(ctx, time.Minute, f.Trim))
		step("produce resumed after DeleteRecords", within(ctx, time.Minute, f.ProduceOne))
		step("filled until refused again", within(ctx, 5*time.Minute, f.FillUntilRefused))
		step("disks grown by half", resize(size*3/2))
		step("produce resumed on the grown disks", within(ctx, time.Minute, f.ProduceOne))
		step("read back", within(ctx, 2*time.Minute, f.ReadBack))
		step("DeleteRecords", within(ctx, time.Minute, f.Trim))
		step("disks shrunk back", poll(ctx, "the disks shrunk back", func() (bool, error) { return resize(size) == nil, nil }))
	}
	return rows
}

// within runs f with a deadline of d.
func within(ctx context.Context, d time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return f(ctx)
}

// singleNodeConfig is configs/single.yaml for node n of a one-node
// harness cluster.
func singleNodeConfig(n *Node) (string, error) {
	return fmt.Sprintf(`node_id: %d
data_dir: %s
listeners:
  - name: PLAINTEXT
    addr: %s
bootstrap_expect: 1
default_partitions: 1
default_replication_factor: 1
auto_create_topics: true
log_level: info
write_caching_default: false
`, n.ID, n.DataDir, n.KafkaAddr), nil
}
