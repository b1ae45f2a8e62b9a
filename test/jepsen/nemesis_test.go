package jepsen

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/test/e2e"
)

// stopCluster is a cluster whose graceful stop takes a while, as a node's
// does, and fails only if its context ends first, as e2e.Cluster.Stop
// does (calling that a hang).
type stopCluster struct {
	stopping chan struct{} // closed when the first Stop begins
	once     sync.Once     // closes stopping
	stopped  atomic.Int32  // Stops that ran their course
}

func (c *stopCluster) Stop(ctx context.Context, id int) error {
	c.once.Do(func() { close(c.stopping) })
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(300 * time.Millisecond):
		c.stopped.Add(1)
		return nil
	}
}

func (c *stopCluster) Running() []int                             { return []int{1, 2, 3} }
func (c *stopCluster) Net() *e2e.Net                              { return nil }
func (c *stopCluster) Kill(int) error                             { return nil }
func (c *stopCluster) StartNode(context.Context, int) error       { return nil }
func (c *stopCluster) Pause(context.Context, int) error           { return nil }
func (c *stopCluster) Resume(int) error                           { return nil }
func (c *stopCluster) WaitReady(context.Context, ...string) error { return nil }
func (c *stopCluster) Leader(context.Context, string, int32) (e2e.PartitionLeader, error) {
	return e2e.PartitionLeader{}, nil
}
func (c *stopCluster) OffsetsPartitionLeader(context.Context, string) (int32, e2e.PartitionLeader, error) {
	return 0, e2e.PartitionLeader{}, nil
}
func (c *stopCluster) TxnStatePartitionLeader(context.Context, string) (int32, e2e.PartitionLeader, error) {
	return 0, e2e.PartitionLeader{}, nil
}

// The nemesis stopped while a node it restarts is shutting down lets that
// shutdown finish, then heals it, as it lets every begun fault run its
// course: cutting it short once failed make test with "node 2 did not
// stop after SIGTERM ... context canceled".
func TestNemesisStopLetsARestartFinish(t *testing.T) {
	c := &stopCluster{stopping: make(chan struct{})}
	n := startNemesis(c, []string{FaultRestart}, "t", 1, nil, 1)
	select {
	case <-c.stopping:
	case <-time.After(30 * time.Second):
		t.Fatal("the nemesis began no restart within 30s")
	}
	faults, err := n.Stop()
	if err != nil {
		t.Fatalf("Stop during a restart: %v", err)
	}
	if len(faults) != 1 || c.stopped.Load() != 1 {
		t.Fatalf("faults %v, graceful stops finished %d; want one restart, finished", faults, c.stopped.Load())
	}
}
