package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/test/e2e"
)

// Fault kinds.
const (
	FaultKill        = "kill"              // kill -9 a node, start it again after the hold
	FaultPause       = "pause"             // SIGSTOP, SIGCONT after the hold
	FaultRestart     = "restart"           // SIGTERM, start again after the hold
	FaultIsolate     = "partition-isolate" // one node cut off from the others (a minority and a majority)
	FaultBridge      = "partition-bridge"  // two nodes cut from each other, a third sees both
	FaultOneWay      = "partition-oneway"  // one node's traffic to another dropped, not the reply
	FaultLeaderKill  = "leader-kill"       // kill -9 the leader of a partition of the topic
	FaultLeaderPause = "leader-pause"      // SIGSTOP the leader of a partition of the topic
	FaultCoordKill   = "coordinator-kill"  // kill -9 the leader of a group's or transactional id's coordinator partition
)

// faultKinds is every kind, the order a schedule deals them from.
var faultKinds = []string{FaultKill, FaultPause, FaultRestart, FaultIsolate, FaultBridge,
	FaultOneWay, FaultLeaderKill, FaultLeaderPause, FaultCoordKill}

// Fault is one fault the nemesis injected: At and Healed are offsets from
// the nemesis's start.
type Fault struct {
	Kind       string
	Detail     string
	At, Healed time.Duration
}

func (f Fault) String() string {
	return fmt.Sprintf("%7.1fs %-18s %-40s healed %.1fs", f.At.Seconds(), f.Kind, f.Detail, f.Healed.Seconds())
}

// cluster is what the nemesis uses of an e2e.Cluster.
type cluster interface {
	Running() []int
	Net() *e2e.Net
	Kill(id int) error
	StartNode(ctx context.Context, id int) error
	Stop(ctx context.Context, id int) error
	Pause(ctx context.Context, id int) error
	Resume(id int) error
	WaitReady(ctx context.Context, topics ...string) error
	Leader(ctx context.Context, topic string, partition int32) (e2e.PartitionLeader, error)
	OffsetsPartitionLeader(ctx context.Context, group string) (int32, e2e.PartitionLeader, error)
	TxnStatePartitionLeader(ctx context.Context, txnID string) (int32, e2e.PartitionLeader, error)
}

// faultStepBound bounds a fault's inject and, apart, its heal with the
// cluster ready again; neither is cut short by Stop.
const faultStepBound = 2 * time.Minute

// Nemesis injects one fault at a time into a partitionable e2e.Cluster:
// each held 2-5 s, then healed, the cluster ready again, and 2-4 s of calm.
type Nemesis struct {
	c      cluster
	kinds  []string // the kinds dealt (faultKinds)
	topic  string
	parts  int32
	keys   []string // transactional ids and groups whose coordinators it may kill
	rng    *rand.Rand
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex // guards faults and errs
	faults []Fault
	errs   []error
}

// StartNemesis starts injecting faults until Stop.
func StartNemesis(c *e2e.Cluster, topic string, parts int32, keys []string, seed uint64) *Nemesis {
	return startNemesis(c, faultKinds, topic, parts, keys, seed)
}

// startNemesis is StartNemesis dealing only kinds.
func startNemesis(c cluster, kinds []string, topic string, parts int32, keys []string, seed uint64) *Nemesis {
	ctx, cancel := context.WithCancel(context.Background())
	n := &Nemesis{c: c, kinds: kinds, topic: topic, parts: parts, keys: keys, rng: rand.New(rand.NewPCG(seed, 29)),
		start: time.Now(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		n.run(ctx)
	}()
	return n
}

// Stop ends the schedule once the fault in progress is healed, and
// returns the faults and what went wrong healing them.
func (n *Nemesis) Stop() ([]Fault, error) {
	n.cancel()
	<-n.done
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.faults, errors.Join(n.errs...)
}

func (n *Nemesis) run(ctx context.Context) {
	var deck []string
	for {
		if sleep(ctx, 2*time.Second+time.Duration(n.rng.Int64N(int64(2*time.Second)))) != nil {
			return
		}
		if len(deck) == 0 {
			deck = append(deck, n.kinds...)
			n.rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		kind := deck[0]
		deck = deck[1:]
		f := Fault{Kind: kind, At: time.Since(n.start)}
		// A fault begun runs its course: Stop during a graceful restart
		// must not cut the node's shutdown short (and call it a hang).
		ictx, icancel := context.WithTimeout(context.Background(), faultStepBound)
		heal, err := n.inject(ictx, &f)
		icancel()
		if err != nil {
			n.fail(fmt.Errorf("inject %s: %w", kind, err))
			continue
		}
		// The hold is not cut short by Stop: every fault gets its time.
		time.Sleep(2*time.Second + time.Duration(n.rng.Int64N(int64(3*time.Second))))
		hctx, cancel := context.WithTimeout(context.Background(), faultStepBound)
		err = heal(hctx)
		if err == nil {
			err = n.c.WaitReady(hctx, n.topic)
		}
		cancel()
		f.Healed = time.Since(n.start)
		n.mu.Lock()
		n.faults = append(n.faults, f)
		n.mu.Unlock()
		if err != nil {
			n.fail(fmt.Errorf("heal %s: %w", f, err))
		}
	}
}

func (n *Nemesis) fail(err error) {
	n.mu.Lock()
	n.errs = append(n.errs, err)
	n.mu.Unlock()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// inject starts fault f and returns how to heal it.
func (n *Nemesis) inject(ctx context.Context, f *Fault) (func(context.Context) error, error) {
	nodes := n.c.Running()
	if len(nodes) == 0 {
		return nil, e2e.ErrNotRunning
	}
	node := nodes[n.rng.IntN(len(nodes))]
	switch f.Kind {
	case FaultKill, FaultLeaderKill, FaultCoordKill:
		if f.Kind != FaultKill {
			var err error
			if node, f.Detail, err = n.target(ctx, f.Kind); err != nil {
				return nil, err
			}
		}
		f.Detail = strings.TrimSpace(fmt.Sprintf("node %d %s", node, f.Detail))
		return func(ctx context.Context) error { return n.c.StartNode(ctx, node) }, n.c.Kill(node)
	case FaultPause, FaultLeaderPause:
		if f.Kind == FaultLeaderPause {
			var err error
			if node, f.Detail, err = n.target(ctx, f.Kind); err != nil {
				return nil, err
			}
		}
		f.Detail = strings.TrimSpace(fmt.Sprintf("node %d %s", node, f.Detail))
		return func(context.Context) error { return n.c.Resume(node) }, n.c.Pause(ctx, node)
	case FaultRestart:
		f.Detail = fmt.Sprintf("node %d", node)
		return func(ctx context.Context) error { return n.c.StartNode(ctx, node) }, n.c.Stop(ctx, node)
	default:
		return n.partition(f, node)
	}
}

// partition cuts the network around node as f.Kind says.
func (n *Nemesis) partition(f *Fault, node int) (func(context.Context) error, error) {
	net := n.c.Net()
	if net == nil {
		return nil, errors.New("jepsen: the cluster is not partitionable")
	}
	others := []int{}
	for id := 1; id <= e2e.NodeCount; id++ {
		if id != node {
			others = append(others, id)
		}
	}
	a, b := others[0], others[1]
	switch f.Kind {
	case FaultIsolate:
		net.Isolate(node, e2e.BothChannels...)
		f.Detail = fmt.Sprintf("{%d} | %v", node, others)
	case FaultBridge:
		net.Cut(a, b, e2e.BothChannels...)
		net.Cut(b, a, e2e.BothChannels...)
		f.Detail = fmt.Sprintf("%d and %d apart, %d bridges", a, b, node)
	case FaultOneWay:
		net.Cut(node, a, e2e.BothChannels...)
		f.Detail = fmt.Sprintf("%d -> %d dropped", node, a)
	}
	return func(context.Context) error { net.Heal(); return nil }, nil
}

// target finds the node a targeted fault hits: the leader of a random
// partition of the topic, or of the coordinator partition of a random key.
func (n *Nemesis) target(ctx context.Context, kind string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if kind == FaultCoordKill && len(n.keys) > 0 {
		key := n.keys[n.rng.IntN(len(n.keys))]
		var l e2e.PartitionLeader
		var err error
		if strings.HasPrefix(key, "group:") {
			_, l, err = n.c.OffsetsPartitionLeader(ctx, strings.TrimPrefix(key, "group:"))
		} else {
			_, l, err = n.c.TxnStatePartitionLeader(ctx, key)
		}
		return l.Node, "coordinating " + key, err
	}
	p := n.rng.Int32N(n.parts)
	l, err := n.c.Leader(ctx, n.topic, p)
	return l.Node, fmt.Sprintf("leading %s-%d", n.topic, p), err
}
