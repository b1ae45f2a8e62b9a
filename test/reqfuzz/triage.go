package reqfuzz

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// RestartExited starts again every target whose process exited.
func (r *Runner) RestartExited(ctx context.Context) error {
	for _, t := range r.cfg.Targets {
		if _, err := t.Pid(); err == nil {
			continue
		}
		r.cfg.Logf("reqfuzz: restarting node %d", t.ID)
		if err := t.Restart(ctx); err != nil {
			return fmt.Errorf("reqfuzz: restart node %d: %w", t.ID, err)
		}
	}
	return nil
}

// Triage runs after a node exited during the last round. It restarts the
// nodes that exited, then sends the round's unanswered requests one at a
// time, each alone on a new connection to the node it went to (first the
// oldest unanswered of every connection, then the others), until a node
// exits. It returns that request as a case (the nodes restarted again),
// or nil if none crashes a node on its own.
func (r *Runner) Triage(ctx context.Context) (*Case, error) {
	var first, rest []Conn
	for _, o := range r.outcomes {
		for i, fr := range o.unanswered() {
			c := Conn{Node: o.node, Note: fr.desc, Frames: [][]byte{fr.b}}
			if i == 0 {
				first = append(first, c)
			} else {
				rest = append(rest, c)
			}
		}
	}
	for _, c := range append(first, rest...) {
		if err := r.RestartExited(ctx); err != nil {
			return nil, err
		}
		one := &Case{Conns: []Conn{c}}
		if _, err := Replay(ctx, r.cfg.Targets, one, 2*time.Second); err != nil {
			return nil, err
		}
		if id := r.exitedWithin(ctx, 2*time.Second); id != 0 {
			one.Comments = []string{
				fmt.Sprintf("found by reqfuzz seed %d round %d: %s", r.cfg.Seed, r.round, c.Note),
				fmt.Sprintf("alone, it makes node %d exit", id),
			}
			stack := strings.Split(crashLines(r.target(id).LogTail(400)), "\n")
			for _, l := range stack[:min(len(stack), 12)] {
				one.Comments = append(one.Comments, "  "+l)
			}
			return one, r.RestartExited(ctx)
		}
	}
	return nil, r.RestartExited(ctx)
}

// exitedWithin polls the targets for d and returns the id of one whose
// process exited, or 0.
func (r *Runner) exitedWithin(ctx context.Context, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		for _, t := range r.cfg.Targets {
			if _, err := t.Pid(); err != nil {
				return t.ID
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *Runner) target(id int) Target {
	for _, t := range r.cfg.Targets {
		if t.ID == id {
			return t
		}
	}
	return Target{LogTail: func(int) string { return "" }}
}
