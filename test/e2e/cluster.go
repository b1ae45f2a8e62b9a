package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
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
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "minikafka-node")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/node")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("e2e: go build ./cmd/node: %w\n%s", err, out)
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
}

// Node is one node of a Cluster. Its addresses and directories are fixed
// for the cluster's life: a restarted node comes back on the same ports
// with the same data.
type Node struct {
	ID         int
	KafkaAddr  string
	RaftAddr   string
	GossipAddr string
	DataDir    string
	LogFile    string // the process's stdout and stderr, appended across restarts
	config     string // its configs/node<ID>.yaml

	// Guarded by Cluster.mu.
	proc   *process // nil while not started
	paused bool
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
	base := t.TempDir()
	for id := 1; id <= NodeCount; id++ {
		var ports [3]int
		for i := range ports {
			p, err := freePort()
			if err != nil {
				return nil, err
			}
			ports[i] = p
		}
		addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
		n := &Node{
			ID:         id,
			KafkaAddr:  addr(ports[0]),
			RaftAddr:   addr(ports[1]),
			GossipAddr: addr(ports[2]),
			DataDir:    filepath.Join(base, fmt.Sprintf("node%d", id)),
			LogFile:    filepath.Join(base, fmt.Sprintf("node%d.log", id)),
			config:     filepath.Join(opts.ConfigDir, fmt.Sprintf("node%d.yaml", id)),
		}
		if _, err := os.Stat(n.config); err != nil {
			return nil, fmt.Errorf("e2e: node config: %w", err)
		}
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(c.cleanup)
	for id := 1; id <= NodeCount; id++ {
		if err := c.spawn(id); err != nil {
			return nil, err
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		return nil, err
	}
	return c, nil
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
		for _, n := range c.nodes {
			c.t.Logf("---- node %d log (%s), last lines ----\n%s", n.ID, n.LogFile, c.LogTail(n.ID, 40))
		}
	}
}

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
		join = append(join, o.GossipAddr)
	}
	args := []string{
		"--config", n.config,
		"--node-id", strconv.Itoa(n.ID),
		"--data-dir", n.DataDir,
		"--kafka-addr", n.KafkaAddr,
		"--raft-addr", n.RaftAddr,
		"--gossip-addr", n.GossipAddr,
		"--join", strings.Join(join, ","),
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
	cmd := exec.Command(c.opts.Binary, c.args(n)...)
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

// StartNode starts a stopped or killed node with its ports and data and
// waits until its Kafka listener answers. Use WaitReady for the cluster.
func (c *Cluster) StartNode(ctx context.Context, id int) error {
	if err := c.spawn(id); err != nil {
		return err
	}
	c.opts.Logf("e2e: started node %d", id)
	return c.waitListening(ctx, id)
}

// StartAll starts every node that is not running, at once, and waits
// until the cluster is ready for topics.
func (c *Cluster) StartAll(ctx context.Context, topics ...string) error {
	for _, n := range c.nodes {
		if !c.IsRunning(n.ID) {
			if err := c.spawn(n.ID); err != nil {
				return err
			}
		}
	}
	c.opts.Logf("e2e: started every stopped node")
	return c.WaitReady(ctx, topics...)
}

// waitListening polls node id with Metadata requests until it answers.
func (c *Cluster) waitListening(ctx context.Context, id int) error {
	return poll(ctx, fmt.Sprintf("node %d listening", id), func() (bool, error) {
		if !c.IsRunning(id) {
			return false, fmt.Errorf("e2e: node %d exited while starting:\n%s", id, c.LogTail(id, 20))
		}
		_, err := c.Metadata(ctx, id)
		return err == nil, nil
	})
}

// signal sends sig to node id's process group. expected marks the exit
// that may follow as intended. It reports whether a process was signalled.
func (c *Cluster) signal(id int, sig syscall.Signal, expected bool) (*process, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[id-1]
	p := n.proc
	if p == nil || p.exited() {
		return p, false
	}
	if expected {
		p.expected = true
	}
	// The process leads its own group (Setpgid): -pid reaches it and any
	// child it might start.
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return p, false
	}
	if sig == syscall.SIGTERM && n.paused {
		// A stopped process acts on SIGTERM only once continued.
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
		n.paused = false
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT, syscall.SIGKILL:
		n.paused = false
	}
	return p, true
}

// ErrNotRunning is returned for a fault on a node that does not run.
var ErrNotRunning = errors.New("e2e: node not running")

// reapTimeout bounds the wait for a killed process to be reaped.
const reapTimeout = 10 * time.Second

// Kill sends SIGKILL to node id (kill -9) and waits until it is gone.
func (c *Cluster) Kill(id int) error {
	p, ok := c.signal(id, syscall.SIGKILL, true)
	if !ok {
		return fmt.Errorf("kill node %d: %w", id, ErrNotRunning)
	}
	c.opts.Logf("e2e: kill -9 node %d", id)
	select {
	case <-p.done:
		return nil
	case <-time.After(reapTimeout):
		return fmt.Errorf("e2e: node %d not reaped %v after SIGKILL", id, reapTimeout)
	}
}

// KillAll kills every running node at once (kill -9 of the whole
// cluster) and waits until all are gone.
func (c *Cluster) KillAll() error {
	var procs []*process
	for _, n := range c.nodes {
		if p, ok := c.signal(n.ID, syscall.SIGKILL, true); ok {
			procs = append(procs, p)
		}
	}
	c.opts.Logf("e2e: kill -9 every node")
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(reapTimeout):
			return fmt.Errorf("e2e: pid %d not reaped %v after SIGKILL", p.cmd.Process.Pid, reapTimeout)
		}
	}
	return nil
}

// Pause sends SIGSTOP to node id (it keeps its sockets but does nothing)
// and returns once every thread of the process has stopped: a thread
// running on another CPU may go on briefly after kill(2) returns.
func (c *Cluster) Pause(ctx context.Context, id int) error {
	p, ok := c.signal(id, syscall.SIGSTOP, false)
	if !ok {
		return fmt.Errorf("pause node %d: %w", id, ErrNotRunning)
	}
	c.opts.Logf("e2e: SIGSTOP node %d", id)
	return poll(ctx, fmt.Sprintf("node %d stopped", id), func() (bool, error) {
		return allThreadsStopped(p.cmd.Process.Pid)
	})
}

// allThreadsStopped reports whether every thread of process pid is in the
// stopped state, from /proc/<pid>/task/*/stat.
func allThreadsStopped(pid int) (bool, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err != nil {
			return false, nil // a thread that just exited
		}
		// "pid (comm) S ...": the state follows the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return false, fmt.Errorf("e2e: unexpected %s/%s/stat: %q", dir, task.Name(), b)
		}
		if st := b[i+2]; st != 'T' && st != 't' {
			return false, nil
		}
	}
	return true, nil
}

// Resume sends SIGCONT to a paused node.
func (c *Cluster) Resume(id int) error {
	if _, ok := c.signal(id, syscall.SIGCONT, false); !ok {
		return fmt.Errorf("resume node %d: %w", id, ErrNotRunning)
	}
	c.opts.Logf("e2e: SIGCONT node %d", id)
	return nil
}

// stopTimeout bounds a graceful stop: the node gives its own shutdown 20s.
const stopTimeout = 45 * time.Second

// Stop shuts node id down gracefully (SIGTERM) and waits until it exits.
// If that takes longer than stopTimeout, or ctx ends first, the node is
// killed and Stop returns an error: a graceful shutdown that hangs is a
// bug.
func (c *Cluster) Stop(ctx context.Context, id int) error {
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	p, ok := c.signal(id, syscall.SIGTERM, true)
	if !ok {
		return fmt.Errorf("stop node %d: %w", id, ErrNotRunning)
	}
	c.opts.Logf("e2e: SIGTERM node %d", id)
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("e2e: node %d exited after SIGTERM: %w", id, p.err)
		}
		return nil
	case <-ctx.Done():
		c.signal(id, syscall.SIGKILL, true)
		<-p.done
		return fmt.Errorf("e2e: node %d did not stop after SIGTERM: %w", id, ctx.Err())
	}
}

// StopAll stops every running node gracefully, all at once.
func (c *Cluster) StopAll(ctx context.Context) error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		if !c.IsRunning(n.ID) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Stop(ctx, n.ID)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// RestartNode stops node id gracefully, starts it again and waits until
// the cluster is ready for topics.
func (c *Cluster) RestartNode(ctx context.Context, id int, topics ...string) error {
	if err := c.Stop(ctx, id); err != nil {
		return err
	}
	if err := c.StartNode(ctx, id); err != nil {
		return err
	}
	return c.WaitReady(ctx, topics...)
}

// RollingRestart restarts every node in turn (RestartNode), waiting for
// the cluster to be ready for topics before the next.
func (c *Cluster) RollingRestart(ctx context.Context, topics ...string) error {
	for _, n := range c.nodes {
		if err := c.RestartNode(ctx, n.ID, topics...); err != nil {
			return err
		}
	}
	return nil
}

// Metadata asks node id for the cluster's metadata: the brokers and the
// named topics (none if topics is empty).
func (c *Cluster) Metadata(ctx context.Context, id int, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := Request(rctx, c.nodes[id-1].KafkaAddr, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// PartitionLeader is a partition's leader as metadata reports it.
type PartitionLeader struct {
	Node  int   // the leader's node id
	Epoch int32 // its leader epoch (the Raft term)
}

// leaders asks every running, unpaused node for topic's leaders and
// returns them if all agree and every partition's leader is one of them.
func (c *Cluster) leaders(ctx context.Context, topic string) ([]PartitionLeader, error) {
	running := c.Running()
	if len(running) == 0 {
		return nil, ErrNotRunning
	}
	var agreed []PartitionLeader
	for _, id := range running {
		md, err := c.Metadata(ctx, id, topic)
		if err != nil {
			return nil, err
		}
		if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) == 0 {
			return nil, fmt.Errorf("node %d: topic %q not ready", id, topic)
		}
		ls := make([]PartitionLeader, len(md.Topics[0].Partitions))
		for _, p := range md.Topics[0].Partitions {
			if p.Partition < 0 || int(p.Partition) >= len(ls) {
				return nil, fmt.Errorf("node %d: partition %d of %d", id, p.Partition, len(ls))
			}
			if p.ErrorCode != 0 || p.Leader < 0 || !slices.Contains(running, int(p.Leader)) {
				return nil, fmt.Errorf("node %d: %s[%d] has no running leader (leader %d, code %d)", id, topic, p.Partition, p.Leader, p.ErrorCode)
			}
			ls[p.Partition] = PartitionLeader{Node: int(p.Leader), Epoch: p.LeaderEpoch}
		}
		if agreed == nil {
			agreed = ls
		} else if !slices.Equal(agreed, ls) {
			return nil, fmt.Errorf("nodes disagree on %s's leaders: %v vs %v (node %d)", topic, agreed, ls, id)
		}
	}
	return agreed, nil
}

// Leaders waits until every running, unpaused node reports the same
// leader and epoch for every partition of topic, each leader being one of
// them, and returns the leaders by partition.
func (c *Cluster) Leaders(ctx context.Context, topic string) ([]PartitionLeader, error) {
	var out []PartitionLeader
	err := poll(ctx, "leaders of "+topic, func() (bool, error) {
		ls, err := c.leaders(ctx, topic)
		if err != nil {
			return false, nil
		}
		out = ls
		return true, nil
	})
	return out, err
}

// Leader is Leaders for one partition.
func (c *Cluster) Leader(ctx context.Context, topic string, partition int32) (PartitionLeader, error) {
	ls, err := c.Leaders(ctx, topic)
	if err != nil {
		return PartitionLeader{}, err
	}
	if int(partition) >= len(ls) {
		return PartitionLeader{}, fmt.Errorf("e2e: %s has %d partitions, not %d", topic, len(ls), partition+1)
	}
	return ls[partition], nil
}

// WaitReady waits until every running, unpaused node answers Metadata
// listing all of them as brokers and naming a controller, and every
// partition of each topic has an agreed, running leader (Leaders).
func (c *Cluster) WaitReady(ctx context.Context, topics ...string) error {
	err := poll(ctx, "cluster ready", func() (bool, error) {
		running := c.Running()
		for _, id := range running {
			md, err := c.Metadata(ctx, id)
			if err != nil || md.ControllerID < 0 {
				return false, nil
			}
			var brokers []int
			for _, b := range md.Brokers {
				brokers = append(brokers, int(b.NodeID))
			}
			for _, want := range running {
				if !slices.Contains(brokers, want) {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, t := range topics {
		if _, err := c.Leaders(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// CreateTopic creates a topic and waits until it is ready everywhere.
func (c *Cluster) CreateTopic(ctx context.Context, topic string, partitions int32, replicationFactor int16) error {
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...), client.RequestTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := adm.CreateTopic(ctx, topic, partitions, replicationFactor, nil); err != nil && !errors.Is(err, client.ErrTopicAlreadyExists) {
		return fmt.Errorf("e2e: create topic %s: %w", topic, err)
	}
	return c.WaitReady(ctx, topic)
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

// pollInterval is how often poll looks again.
const pollInterval = 50 * time.Millisecond

// ErrTimeout matches a *WaitError.
var ErrTimeout = errors.New("e2e: condition not met in time")

// WaitError is a condition that did not hold before its context ended.
type WaitError struct {
	What string
	Err  error // the context's error
}

func (e *WaitError) Error() string { return fmt.Sprintf("e2e: waiting for %s: %v", e.What, e.Err) }

// Unwrap gives ErrTimeout and the context's error.
func (e *WaitError) Unwrap() []error { return []error{ErrTimeout, e.Err} }

// poll calls cond every pollInterval until it returns true or an error, or
// ctx ends.
func poll(ctx context.Context, what string, cond func() (bool, error)) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return &WaitError{What: what, Err: ctx.Err()}
		case <-t.C:
		}
	}
}
