package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// skipEnv, set to 1, skips the test where network namespaces cannot be
// made. Without it the test skips there too, except with CI set, where it
// fails (CI runs as root).
const skipEnv = "MINIKAFKA_NETNS_SKIP"

// keepEnv, set to 1, keeps the nodes' configs, data and logs after the
// test, in a directory it names.
const keepEnv = "MINIKAFKA_NETNS_KEEP"

// cluster is the test's three nodes on hosts 1..3 and its client host 4.
type cluster struct {
	t      *testing.T
	net    *Net
	dir    string
	node   string // minikafka-node binary
	client string // netnsclient binary
	nodes  map[int]*Node
}

const (
	clientHost = 4
	topic      = "netns"
	group      = "netns-group"
)

// TestThreeHostsKillNineNothingLost runs three nodes, each in its own
// network namespace with its own address, binding all interfaces and
// advertising that address; clients run in a fourth namespace. It
// produces (idempotent, acks=all) and consumes in a group, kills -9 the
// leader of partition 0, produces and consumes again through the two
// survivors, then restarts the killed node at a new address. Checked:
// every record acknowledged is read by the group, the group resumes at
// its committed offsets after the kill (nothing of the first round again),
// the metadata clients get names the moved node at its new address, and
// a full read finds every acknowledged record exactly once.
func TestThreeHostsKillNineNothingLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startCluster(ctx, t)

	first := c.produce(ctx, "a", 300)
	got := c.consume(ctx, first)
	requireEach(t, "the group's first round", first, got, 1)

	victim := c.leaderOf(ctx, 0)
	t.Logf("kill -9 node %d (leads partition 0)", victim)
	c.nodes[victim].Kill()

	second := c.produce(ctx, "b", 300)
	got = c.consume(ctx, second)
	requireEach(t, "the group's second round", second, got, 1)
	for v := range first {
		if got[v] > 0 {
			t.Errorf("the group read %s again after the kill: its committed offset was lost", v)
		}
	}

	// A node id may come back from another address once gossip has held
	// it failed for membership.DefaultDeadNodeReclaimTime (10 s).
	var survivors []string
	for id := 1; id <= 3; id++ {
		if id != victim {
			survivors = append(survivors, fmt.Sprintf("%s:%d", c.net.IP(id), AdminPort))
		}
	}
	c.run(ctx, "down", "-admin", strings.Join(survivors, ","), "-broker", strconv.Itoa(victim), "-for", "11s")
	moved := fmt.Sprintf("%s.%d", c.net.Subnet(), 10+victim)
	t.Logf("restart node %d at %s (was %s)", victim, moved, c.net.IP(victim))
	if err := c.net.Readdress(ctx, victim, moved); err != nil {
		t.Fatal(err)
	}
	c.start(victim)
	c.run(ctx, "ready", "-admin", c.list(AdminPort), "-topic", topic)
	if addr := c.brokerAddr(ctx, victim); addr != fmt.Sprintf("%s:%d", moved, KafkaPort) {
		t.Errorf("clients are told node %d is at %s, want %s:%d", victim, addr, moved, KafkaPort)
	}

	all := map[string]bool{}
	for v := range first {
		all[v] = true
	}
	for v := range second {
		all[v] = true
	}
	got = c.read(ctx, "read", all)
	requireEach(t, "a full read", all, got, 1)
	for v, n := range got {
		if !all[v] {
			t.Errorf("read %s (%d times), which no producer sent", v, n)
		}
	}
	c.checkRunning()
}

// requireEach fails t unless every value of want was seen exactly times.
func requireEach(t *testing.T, what string, want map[string]bool, seen map[string]int, times int) {
	t.Helper()
	missing, wrong := 0, 0
	for v := range want {
		switch n := seen[v]; {
		case n == 0:
			missing++
		case n != times:
			wrong++
			t.Errorf("%s: %s read %d times, want %d", what, v, n, times)
		}
	}
	if missing > 0 {
		t.Fatalf("%s: %d of %d acknowledged records never read", what, missing, len(want))
	}
	t.Logf("%s: all %d acknowledged records read, %d of them other than %d times", what, len(want), wrong, times)
}

func startCluster(ctx context.Context, t *testing.T) *cluster {
	n, err := Setup(ctx, t, clientHost)
	switch {
	case errors.Is(err, ErrNoPrivilege) && os.Getenv(skipEnv) == "1":
		t.Skipf("%v (%s=1)", err, skipEnv)
	case errors.Is(err, ErrNoPrivilege) && os.Getenv("CI") == "":
		t.Skipf("%v; run as root (CI does, where this fails)", err)
	case err != nil:
		t.Fatalf("%v\nrun as root, or set %s=1 to skip this test", err, skipEnv)
	}
	c := &cluster{t: t, net: n, dir: t.TempDir(), nodes: map[int]*Node{}}
	if os.Getenv(keepEnv) == "1" {
		if c.dir, err = os.MkdirTemp("", "netns-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("node configs, data and logs in %s (kept: %s=1)", c.dir, keepEnv)
	}
	bins, err := Build(ctx, c.dir, "./cmd/node", "./test/netns/netnsclient")
	if err != nil {
		t.Fatal(err)
	}
	c.node, c.client = bins[0], bins[1]
	for id := 1; id <= 3; id++ {
		c.start(id)
	}
	c.run(ctx, "ready", "-admin", c.list(AdminPort), "-topic", topic)
	t.Logf("nodes at %s, %s, %s; clients at %s", n.IP(1), n.IP(2), n.IP(3), n.IP(clientHost))
	return c
}

// start writes node id's config for its host's address now and starts it
// there.
func (c *cluster) start(id int) {
	var seeds []string
	for i := 1; i <= 3; i++ {
		seeds = append(seeds, fmt.Sprintf("%s:%d", c.net.IP(i), GossipPort))
	}
	cfg := filepath.Join(c.dir, fmt.Sprintf("node%d.yaml", id))
	data := filepath.Join(c.dir, fmt.Sprintf("data%d", id))
	if err := os.WriteFile(cfg, []byte(NodeConfig(id, data, c.net.IP(id), seeds)), 0o644); err != nil {
		c.t.Fatal(err)
	}
	nd, err := c.net.Start(c.t, id, id, c.node, cfg, c.dir)
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id] = nd
}

// list is every node's address with port, comma-separated.
func (c *cluster) list(port int) string {
	var out []string
	for i := 1; i <= 3; i++ {
		out = append(out, fmt.Sprintf("%s:%d", c.net.IP(i), port))
	}
	return strings.Join(out, ",")
}

// run runs netnsclient in the client namespace and returns its stdout
// lines; it fails the test if the client fails.
func (c *cluster) run(ctx context.Context, args ...string) []string {
	c.t.Helper()
	full := append([]string{args[0], "-brokers", c.list(KafkaPort)}, args[1:]...)
	cmd := c.net.Command(ctx, clientHost, c.client, full...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("netnsclient %s: %v\n%s%s", strings.Join(full, " "), err, stderr.String(), c.logs())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// logs is the end of every node's log, for a failure message.
func (c *cluster) logs() string {
	var b strings.Builder
	for id := 1; id <= 3; id++ {
		if nd := c.nodes[id]; nd != nil {
			fmt.Fprintf(&b, "\n--- node %d (exited: %v), last lines of %s:\n%s\n", id, nd.Exited(), nd.Log, nd.LogTail(15))
		}
	}
	return b.String()
}

// produce sends count records prefix-i and returns those acknowledged;
// every record must be.
func (c *cluster) produce(ctx context.Context, prefix string, count int) map[string]bool {
	acked := map[string]bool{}
	for _, l := range c.run(ctx, "produce", "-topic", topic, "-prefix", prefix, "-count", strconv.Itoa(count)) {
		f := strings.Fields(l)
		switch {
		case len(f) == 4 && f[0] == "ack":
			acked[f[1]] = true
		default:
			c.t.Errorf("produce: %s", l)
		}
	}
	if len(acked) != count {
		c.t.Fatalf("produce %s: %d of %d records acknowledged", prefix, len(acked), count)
	}
	c.t.Logf("produce %s: %d records acknowledged", prefix, len(acked))
	return acked
}

// consume reads as the test's group until every value of want came.
func (c *cluster) consume(ctx context.Context, want map[string]bool) map[string]int {
	return c.read(ctx, "consume", want, "-group", group)
}

// read runs the client's read or consume until every value of want came
// and counts what it read.
func (c *cluster) read(ctx context.Context, how string, want map[string]bool, args ...string) map[string]int {
	file := filepath.Join(c.dir, how+"-want.txt")
	var b strings.Builder
	for v := range want {
		b.WriteString(v + "\n")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		c.t.Fatal(err)
	}
	got := map[string]int{}
	for _, l := range c.run(ctx, append([]string{how, "-topic", topic, "-want", file}, args...)...) {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "got" {
			got[f[1]]++
		}
	}
	return got
}

// leaderOf is the node leading partition p.
func (c *cluster) leaderOf(ctx context.Context, p int) int {
	for _, l := range c.run(ctx, "leaders", "-topic", topic) {
		var part, node int
		if _, err := fmt.Sscanf(l, "leader %d %d", &part, &node); err == nil && part == p && node > 0 {
			return node
		}
	}
	c.t.Fatalf("partition %d has no leader", p)
	return 0
}

// brokerAddr is the host:port the cluster's metadata gives for node id.
func (c *cluster) brokerAddr(ctx context.Context, id int) string {
	for _, l := range c.run(ctx, "leaders", "-topic", topic) {
		var node int
		var addr string
		if _, err := fmt.Sscanf(l, "broker %d %s", &node, &addr); err == nil && node == id {
			return addr
		}
	}
	return ""
}

// checkRunning fails the test if a node the test did not kill exited.
func (c *cluster) checkRunning() {
	for id, nd := range c.nodes {
		if nd.Exited() {
			c.t.Errorf("node %d exited on its own; last lines of its log:\n%s", id, nd.LogTail(20))
		}
	}
}
