// Package testcluster starts MiniKafka nodes in-process for tests: real
// Raft over loopback TCP, real gossip, real files under t.TempDir(), and
// fast Raft timing. Nodes can be stopped gracefully, halted (a stand-in
// for kill -9) and restarted on the same ports and data.
package testcluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/multiraft"
)

// Timing is Raft timing for loopback clusters: the default timeouts (a
// halted node's groups get leaders at once anyway, from multiraft's
// successors) with a short commit timeout. Shorter timeouts (300 ms, a
// 150 ms lease) made leaders step down under make test's load, and tests
// failed on the elections that followed.
func Timing() multiraft.Timing {
	t := multiraft.DefaultTiming()
	t.CommitTimeout = 10 * time.Millisecond
	return t
}

// Cluster is a set of in-process nodes numbered 1..n.
type Cluster struct {
	t testing.TB

	// mu guards nodes and cfgs: tests may stop and start nodes from
	// helper goroutines.
	mu    sync.Mutex
	nodes []*broker.Node // nil where stopped
	cfgs  []broker.Config
}

// Option adjusts every node's config before the first start.
type Option func(*broker.Config)

// Start starts n nodes (bootstrap_expect n, replication factor n by
// default) and waits until all are ready. They are shut down at the end
// of the test.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	base := t.TempDir()
	for i := 1; i <= n; i++ {
		cfg := broker.DefaultConfig()
		cfg.NodeID = int32(i)
		cfg.DataDir = filepath.Join(base, strconv.Itoa(i))
		cfg.KafkaAddr, cfg.RaftAddr, cfg.GossipAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		cfg.BootstrapExpect = n
		cfg.PartitionRaft, cfg.MetaRaft = Timing(), Timing()
		cfg.LeaderRebalanceInterval = time.Second
		cfg.DefaultReplicationFactor = int16(n)
		cfg.SegmentBytes = 1 << 20
		// Fewer Raft groups for __consumer_offsets, and no wait for more
		// members before a new group's first rebalance.
		cfg.OffsetsTopicPartitions = 4
		cfg.ShareGroups.StatePartitions = 4
		cfg.GroupInitialRebalanceDelay = 0
		cfg.GroupMinSessionTimeout = 100 * time.Millisecond
		// The reserve the node needs, not 5% of the machine's disk: the
		// tests must not depend on how full it is.
		cfg.Storage.MinFreeBytes = 1
		if os.Getenv("MINIKAFKA_TEST_LOG") != "" {
			cfg.Logger = logging.New(os.Stderr, -4).With("test", t.Name())
		}
		for _, o := range opts {
			o(&cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
		c.nodes = append(c.nodes, nil)
		c.StartNode(i)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		nodes := c.nodes
		c.nodes = make([]*broker.Node, len(nodes))
		c.mu.Unlock()
		var wg sync.WaitGroup
		for _, nd := range nodes {
			if nd != nil {
				wg.Add(1)
				go func() { defer wg.Done(); nd.Shutdown(context.Background()) }()
			}
		}
		wg.Wait()
	})
	c.WaitReady()
	return c
}

// WaitReady waits until every running node knows the cluster and sees
// every running node as a live broker, so that a topic created next may
// have a replica on each (else INVALID_REPLICATION_FACTOR).
func (c *Cluster) WaitReady() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	running := c.Running()
	for _, nd := range running {
		if err := nd.WaitReady(ctx); err != nil {
			c.t.Fatalf("node %d not ready: %v", nd.ID(), err)
		}
	}
	for _, nd := range running {
		for !seesAll(nd.LiveBrokers(), running) {
			select {
			case <-ctx.Done():
				c.t.Fatalf("node %d sees live brokers %v, want every running node", nd.ID(), nd.LiveBrokers())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// seesAll reports whether live holds every node of running.
func seesAll(live []int32, running []*broker.Node) bool {
	for _, nd := range running {
		if !slices.Contains(live, nd.ID()) {
			return false
		}
	}
	return true
}

// StartNode starts node id, joining through the running nodes. The first
// start binds free ports; restarts reuse them, as a real node's config
// would.
func (c *Cluster) StartNode(id int) {
	c.t.Helper()
	c.mu.Lock()
	cfg := c.cfgs[id-1]
	cfg.Join = nil
	for j, nd := range c.nodes {
		if nd != nil && j != id-1 {
			cfg.Join = append(cfg.Join, nd.GossipAddr())
		}
	}
	c.mu.Unlock()
	if len(cfg.Join) == 0 && cfg.BootstrapExpect > 1 {
		cfg.Join = []string{"127.0.0.1:1"} // the first node is found by the others
	}
	nd, err := broker.Start(context.Background(), cfg)
	if err != nil {
		c.t.Fatalf("start node %d: %v", id, err)
	}
	c.mu.Lock()
	c.nodes[id-1] = nd
	c.cfgs[id-1].KafkaAddr = nd.KafkaAddr()
	if len(c.cfgs[id-1].Listeners) > 0 {
		c.cfgs[id-1].Listeners = nd.Listeners()
	}
	c.cfgs[id-1].RaftAddr = nd.RaftAddr()
	c.cfgs[id-1].GossipAddr = nd.GossipAddr()
	c.mu.Unlock()
}

// Configure changes node id's config for its next start.
func (c *Cluster) Configure(id int, o Option) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o(&c.cfgs[id-1])
}

func (c *Cluster) take(id int) *broker.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	nd := c.nodes[id-1]
	c.nodes[id-1] = nil
	return nd
}

// StopNode shuts node id down gracefully.
func (c *Cluster) StopNode(id int) {
	if nd := c.take(id); nd != nil {
		nd.Shutdown(context.Background())
	}
}

// HaltNode stops node id abruptly (see broker.Node.Halt).
func (c *Cluster) HaltNode(id int) {
	if nd := c.take(id); nd != nil {
		nd.Halt()
	}
}

// DataDir is node id's data directory.
func (c *Cluster) DataDir(id int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfgs[id-1].DataDir
}

// Node returns node id, or nil if it is stopped.
func (c *Cluster) Node(id int) *broker.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id-1]
}

// Running returns the running nodes.
func (c *Cluster) Running() []*broker.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*broker.Node
	for _, nd := range c.nodes {
		if nd != nil {
			out = append(out, nd)
		}
	}
	return out
}

// Seeds returns the Kafka addresses of the running nodes.
func (c *Cluster) Seeds() []string {
	var s []string
	for _, nd := range c.Running() {
		s = append(s, nd.KafkaAddr())
	}
	return s
}

// Leader returns the node id leading topic's partition p as the running
// nodes see it, once they agree, or -1 after timeout.
func (c *Cluster) Leader(topic string, p int32, timeout time.Duration) (leader, epoch int32) {
	deadline := time.Now().Add(timeout)
	for {
		leader, epoch = -1, -1
		agree := true
		for _, nd := range c.Running() {
			l, e, ok := nd.PartitionLeader(topic, p)
			if !ok || (leader >= 0 && (l != leader || e != epoch)) {
				agree = false
				break
			}
			leader, epoch = l, e
		}
		if agree && leader >= 0 && c.Node(int(leader)) != nil {
			return leader, epoch
		}
		if time.Now().After(deadline) {
			return -1, -1
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// GoleakOptions are the goroutines a test that runs clusters may leave
// behind through no fault of ours, for goleak.VerifyTestMain:
//
//   - hashicorp/raft v1.8.0: a leadership transfer cut short by the leader
//     shutting down leaves raft.(*Raft).leadershipTransfer blocked sending
//     on its trigger or done channel, and the leaderLoop goroutine that
//     waits for it blocked too (the rebalance loop and graceful shutdown
//     both transfer leadership, so a test that stops nodes can hit it).
//   - memberlist v0.7.0's packet handler may still be draining when
//     Shutdown returns, and a probe of another node in flight at Shutdown
//     waits out its probe timeout (probeNode's select has no shutdown
//     case): up to about a second after a test halts a node.
func GoleakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/hashicorp/raft.(*Raft).leadershipTransfer"),
		goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*Raft).leaderLoop.func2"),
		goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).packetHandler"),
		goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"),
	}
}

// Client returns a franz-go client of the cluster's nodes, closed when the
// test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
