package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NodeCount is the number of nodes of a Cluster: one per
// configs/node<N>.yaml.
const NodeCount = 3

// ModuleRoot returns the directory holding the module's go.mod, searching
// upwards from the working directory (a test's package directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("e2e: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// BuildNode builds cmd/node into dir and returns the binary's path. It is
// built without the race detector, whatever the test binary uses, to keep
// the nodes fast.
func BuildNode(ctx context.Context, dir string) (string, error) {
	return Build(ctx, dir, "./cmd/node", "minikafka-node")
}

// Build builds the module's package pkg into dir/name and returns the
// binary's path. -trimpath keeps directories out of the build cache's
// keys, so that an older build of the module (buildOlder) reuses every
// package it shares with this one.
func Build(ctx context.Context, dir, pkg, name string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return BuildIn(ctx, root, dir, pkg, name)
}

// BuildIn is Build of the module whose source is in root (another
// build's, as in a rolling upgrade).
func BuildIn(ctx context.Context, root, dir, pkg, name string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("e2e: go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// Options configure a Cluster.
type Options struct {
	// Binary is the minikafka-node executable (BuildNode). Required.
	Binary string
	// ConfigDir holds node1.yaml .. node3.yaml. Default: <module>/configs.
	ConfigDir string
	// Args are extra flags for every node, after the harness's own (for
	// example "--raft-snapshot-threshold", "64").
	Args []string
	// Logf receives the harness's events (faults, restarts). Default: the
	// test's Logf.
	Logf func(format string, args ...any)
	// Partitionable puts node N on its own IP (NodeIP) and its Raft and
	// gossip traffic through the harness's proxies (Cluster.Net), which
	// can cut or delay any direction between two nodes. Clients reach the
	// Kafka ports directly.
	Partitionable bool
	// Nodes is how many nodes the cluster has; 0 means NodeCount. A node
	// numbered above NodeCount runs node<NodeCount>.yaml: its id, data
	// directory and addresses come from the harness's flags, as every
	// node's do.
	Nodes int
	// Initial is how many of them (the lowest ids) Start starts; 0 means
	// all. StartNode starts the others, which join the running cluster.
	Initial int
	// Config, when set, returns node n's whole YAML config, written under
	// the test's temp dir and used instead of ConfigDir's file. It must
	// set listeners, with a PLAINTEXT listener on n.KafkaAddr for the
	// harness's clients; --kafka-addr is then left out.
	Config func(n *Node) (string, error)
	// PrepareDataDir, when set, is called with each node before its first
	// start, its DataDir created and empty: a test mounts a small
	// filesystem there, say.
	PrepareDataDir func(n *Node) error
}

// size is the number of nodes.
func (o Options) size() int {
	if o.Nodes > 0 {
		return o.Nodes
	}
	return NodeCount
}

// Node is one node of a Cluster. Its addresses and directories are fixed
// for the cluster's life: a restarted node comes back on the same ports
// with the same data.
type Node struct {
	ID         int
	KafkaAddr  string
	RaftAddr   string
	GossipAddr string
	AdminAddr  string // /metrics, the status page, /readyz (127.0.0.1)
	DataDir    string
	LogFile    string // the process's stdout and stderr, appended across restarts
	config     string // its configs/node<ID>.yaml
	addrs      proxyAddrs

	// Guarded by Cluster.mu.
	proc   *process // nil while not started
	paused bool
	binary string // the executable of its next start (SetBinary); "" is Options.Binary
}

// SetBinary makes node id's next starts run the executable bin (a node
// of another build, as in a rolling upgrade).
func (c *Cluster) SetBinary(id int, bin string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[id-1].binary = bin
}

// process is one run of a node binary.
type process struct {
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited and been reaped
	err      error         // Wait's result; read after done
	expected bool          // the harness stopped it on purpose; guarded by Cluster.mu
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Cluster is three minikafka-node processes on loopback. Create it with
// Start. Its methods may be called from several goroutines.
type Cluster struct {
	t     testing.TB
	opts  Options
	nodes []*Node // index ID-1; the slice and the Nodes' exported fields are immutable

	net        *Net       // nil unless Options.Partitionable
	mu         sync.Mutex // guards every Node's proc and paused, and unexpected
	unexpected []string   // nodes that exited on their own
}

// Start starts the three nodes from ConfigDir/node<N>.yaml with free
// ports and data directories under t.TempDir(), waits until they form a
// cluster (WaitReady), and registers cleanup that kills every node's
// process group, even if the test fails. A node that exits without being
// told to fails the test at cleanup.
func Start(ctx context.Context, t testing.TB, opts Options) (*Cluster, error) {
	t.Helper()
	if opts.Binary == "" {
		return nil, errors.New("e2e: Options.Binary is required")
	}
	if opts.ConfigDir == "" {
		root, err := ModuleRoot()
		if err != nil {
			return nil, err
		}
		opts.ConfigDir = filepath.Join(root, "configs")
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	c := &Cluster{t: t, opts: opts}
	if opts.Partitionable {
		c.net = NewNet(opts.size(), opts.Logf)
		t.Cleanup(c.net.Close) // after c.cleanup (cleanups run last first)
	}
	base, err := clusterDir(t)
	if err != nil {
		return nil, err
	}
	for id := 1; id <= opts.size(); id++ {
		ip := "127.0.0.1"
		if opts.Partitionable {
			ip = NodeIP(id).String()
		}
		ports, err := freePortsOn(ip)
		if err != nil {
			return nil, err
		}
		addr := func(p int) string { return net.JoinHostPort(ip, strconv.Itoa(p)) }
		n := &Node{
			ID:         id,
			KafkaAddr:  addr(ports[0]),
			RaftAddr:   addr(ports[1]),
			GossipAddr: addr(ports[2]),
			AdminAddr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3])),
			DataDir:    filepath.Join(base, fmt.Sprintf("node%d", id)),
			LogFile:    filepath.Join(base, fmt.Sprintf("node%d.log", id)),
			config:     filepath.Join(opts.ConfigDir, fmt.Sprintf("node%d.yaml", min(id, NodeCount))),
		}
		if _, err := os.Stat(n.config); err != nil {
			return nil, fmt.Errorf("e2e: node config: %w", err)
		}
		n.addrs = proxyAddrs{raft: n.RaftAddr, gossip: n.GossipAddr, raftProxy: n.RaftAddr, gossipProxy: n.GossipAddr}
		if c.net != nil {
			if err := c.net.listen(id, &n.addrs); err != nil {
				return nil, fmt.Errorf("e2e: proxies of node %d: %w", id, err)
			}
		}
		if err := opts.prepare(base, n); err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(c.cleanup)
	initial := opts.size()
	if opts.Initial > 0 {
		initial = min(opts.Initial, initial)
	}
	for id := 1; id <= initial; id++ {
		if err := c.spawn(id); err != nil {
			return nil, err
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// prepare writes node n's config (Options.Config) and prepares its data
// directory (Options.PrepareDataDir), when the options ask for them.
func (o Options) prepare(base string, n *Node) error {
	if o.Config != nil {
		yaml, err := o.Config(n)
		if err != nil {
			return fmt.Errorf("e2e: node %d config: %w", n.ID, err)
		}
		n.config = filepath.Join(base, fmt.Sprintf("node%d.yaml", n.ID))
		if err := os.WriteFile(n.config, []byte(yaml), 0o600); err != nil {
			return err
		}
	}
	if o.PrepareDataDir != nil {
		if err := os.MkdirAll(n.DataDir, 0o755); err != nil {
			return err
		}
		if err := o.PrepareDataDir(n); err != nil {
			return fmt.Errorf("e2e: node %d data dir: %w", n.ID, err)
		}
	}
	return nil
}

// cleanup kills every process group, reports nodes that died on their
// own, and shows the end of every node's log if the test failed.
func (c *Cluster) cleanup() {
	for _, n := range c.nodes {
		c.signal(n.ID, syscall.SIGKILL, true)
	}
	for _, n := range c.nodes {
		c.mu.Lock()
		p := n.proc
		c.mu.Unlock()
		if p != nil {
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				c.t.Errorf("node %d: process %d not reaped after SIGKILL", n.ID, p.cmd.Process.Pid)
			}
		}
	}
	c.mu.Lock()
	unexpected := slices.Clone(c.unexpected)
	c.mu.Unlock()
	for _, u := range unexpected {
		c.t.Errorf("%s", u)
	}
	if c.t.Failed() {
		var files []string
		for _, n := range c.nodes {
			c.t.Logf("---- node %d log (%s), last lines ----\n%s", n.ID, n.LogFile, c.LogTail(n.ID, 40))
			files = append(files, n.LogFile)
		}
		if dir, err := keepFailedLogs(files); err != nil {
			c.t.Logf("node logs not kept: %v", err)
		} else {
			c.t.Logf("node logs kept whole in %s", dir)
		}
	}
}

// Net is the cluster's network (Options.Partitionable), or nil.
func (c *Cluster) Net() *Net { return c.net }

// Node returns node id (1..3).
func (c *Cluster) Node(id int) *Node { return c.nodes[id-1] }

// Seeds returns every node's Kafka address, for clients.
func (c *Cluster) Seeds() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.KafkaAddr
	}
	return out
}

// Running returns the ids of the nodes whose process runs and is not
// paused.
func (c *Cluster) Running() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []int
	for _, n := range c.nodes {
		if n.proc != nil && !n.proc.exited() && !n.paused {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// IsRunning reports whether node id's process runs (paused or not).
func (c *Cluster) IsRunning(id int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.nodes[id-1].proc
	return p != nil && !p.exited()
}

// args are the node's command line: its config file, then the overrides.
func (c *Cluster) args(n *Node) []string {
	var join []string
	for _, o := range c.nodes {
		join = append(join, o.addrs.gossipProxy)
	}
	args := []string{
		"--config", n.config,
		"--node-id", strconv.Itoa(n.ID),
		"--data-dir", n.DataDir,
		"--raft-addr", n.RaftAddr,
		"--gossip-addr", n.GossipAddr,
		"--join", strings.Join(join, ","),
		"--admin-addr", n.AdminAddr, // the configs' fixed ports may be taken
	}
	if c.net != nil {
		ip := NodeIP(n.ID).String()
		args = append(args,
			"--advertised-raft-addr", n.addrs.raftProxy, "--raft-source-addr", ip,
			"--advertised-gossip-addr", n.addrs.gossipProxy, "--gossip-source-addr", ip)
	}
	if c.opts.Config == nil { // else its listeners hold KafkaAddr
		args = append(args, "--kafka-addr", n.KafkaAddr)
	}
	return append(args, c.opts.Args...)
}

// environ is the test's environment without MINIKAFKA_* variables: they
// would override the config files' settings in every node.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MINIKAFKA_") {
			env = append(env, kv)
		}
	}
	return env
}

// ErrNodeRunning is returned when starting a node that runs.
var ErrNodeRunning = errors.New("e2e: node already running")

// spawn starts node id's process in its own process group.
func (c *Cluster) spawn(id int) error {
	n := c.nodes[id-1]
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.proc != nil && !n.proc.exited() {
		return fmt.Errorf("node %d: %w", id, ErrNodeRunning)
	}
	logf, err := os.OpenFile(n.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor
	fmt.Fprintf(logf, "==== e2e: starting node %d at %s\n", id, time.Now().Format(time.RFC3339Nano))
	bin := c.opts.Binary
	if n.binary != "" {
		bin = n.binary
	}
	cmd := exec.Command(bin, c.args(n)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("e2e: start node %d: %w", id, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	n.proc, n.paused = p, false
	go func() {
		p.err = cmd.Wait()
		c.mu.Lock()
		if !p.expected {
			c.unexpected = append(c.unexpected, fmt.Sprintf("node %d (pid %d) exited on its own: %v", id, cmd.Process.Pid, p.err))
		}
		c.mu.Unlock()
		close(p.done)
	}()
	return nil
}

// LogTail returns the last n lines of node id's log file.
func (c *Cluster) LogTail(id, n int) string {
	b, err := os.ReadFile(c.nodes[id-1].LogFile)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freePortsOn returns a node's free ports: Kafka, Raft and gossip on ip,
// admin on 127.0.0.1.
func freePortsOn(ip string) ([4]int, error) {
	var ports [4]int
	for i := range ports {
		on := ip
		if i == 3 {
			on = "127.0.0.1"
		}
		p, err := freePortOn(on)
		if err != nil {
			return ports, err
		}
		ports[i] = p
	}
	return ports, nil
}

// clusterDir is where a cluster's data directories and node logs go: a
// test's temporary directory, removed when it ends, or, when
// MINIKAFKA_E2E_KEEP_DIR names a directory, a new directory in it that is
// kept, so that a run that passed with an outlier can still be read.
func clusterDir(t testing.TB) (string, error) {
	keep := os.Getenv("MINIKAFKA_E2E_KEEP_DIR")
	if keep == "" {
		return t.TempDir(), nil
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	dir, err := os.MkdirTemp(keep, name+"-")
	if err != nil {
		return "", fmt.Errorf("e2e: MINIKAFKA_E2E_KEEP_DIR: %w", err)
	}
	t.Logf("e2e: keeping the cluster's data and node logs in %s", dir)
	return dir, nil
}
