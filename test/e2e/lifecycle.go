package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

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
		// SIGQUIT first: the Go runtime writes every goroutine's stack to
		// the node's log and exits, showing where the shutdown hangs.
		c.signal(id, syscall.SIGQUIT, true)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			c.signal(id, syscall.SIGKILL, true)
			<-p.done
		}
		return fmt.Errorf("e2e: node %d did not stop after SIGTERM (SIGQUIT wrote its goroutines to its log): %w", id, ctx.Err())
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
