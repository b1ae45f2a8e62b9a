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
		if t.LogFile != "" { // its crash is reported already
			if _, err := r.readNewLog(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// CrashRestart kills the k-th target (modulo their number) at once, as
// kill -9 does, starts it again and runs the checks: a node must reopen
// whatever state the rounds left it and lose nothing acknowledged. A
// node once wrote a producer-state checkpoint it could not read back,
// and so could not start again.
func (r *Runner) CrashRestart(ctx context.Context, k int) error {
	t := r.cfg.Targets[k%len(r.cfg.Targets)]
	r.cfg.Logf("reqfuzz: kill -9 node %d and start it again", t.ID)
	if err := t.Kill(); err != nil {
		return fmt.Errorf("reqfuzz: kill node %d: %w", t.ID, err)
	}
	if err := t.Restart(ctx); err != nil {
		return fmt.Errorf("node %d did not start again after kill -9: %w", t.ID, err)
	}
	return r.Check(ctx)
}

// Triage runs after a node exited or logged a panic during the last
// round. It restarts the nodes that exited, then sends the round's
// suspects one at a time, each alone on a new connection to the node it
// went to, until one makes a node exit or log a panic. The suspects are
// first the oldest unanswered request of every connection, then the
// requests taken as the cause of a close, then the other unanswered
// ones. It returns the request that did it as a case (the nodes
// restarted again), or nil if none does it on its own.
func (r *Runner) Triage(ctx context.Context) (*Case, error) {
	if _, _, err := r.newPanics(); err != nil { // skip what the round logged
		return nil, err
	}
	for _, c := range r.suspects() {
		if err := r.RestartExited(ctx); err != nil {
			return nil, err
		}
		one := &Case{Conns: []Conn{c}}
		if _, err := Replay(ctx, r.cfg.Targets, one, 2*time.Second); err != nil {
			return nil, err
		}
		what, lines := "exit", ""
		id := r.exitedWithin(ctx, 2*time.Second)
		if id != 0 {
			lines = crashLines(r.target(id).LogTail(400))
		} else if id, lines, _ = r.newPanics(); id != 0 {
			what = "log a panic"
		}
		if id == 0 {
			continue
		}
		one.Comments = []string{
			fmt.Sprintf("found by reqfuzz seed %d round %d: %s", r.cfg.Seed, r.round, c.Note),
			fmt.Sprintf("alone, it makes node %d %s", id, what),
		}
		stack := strings.Split(lines, "\n")
		for _, l := range stack[:min(len(stack), 12)] {
			one.Comments = append(one.Comments, "  "+l)
		}
		return one, r.RestartExited(ctx)
	}
	return nil, r.RestartExited(ctx)
}

// suspects are the last round's requests that may have made a node exit
// or panic, each as a one-request connection, likeliest first.
func (r *Runner) suspects() []Conn {
	var first, closers, rest []Conn
	one := func(node int, fr *request) Conn {
		return Conn{Node: node, Note: fr.desc, Frames: [][]byte{fr.b}}
	}
	for _, o := range r.outcomes {
		for i, fr := range o.unanswered() {
			if i == 0 {
				first = append(first, one(o.node, fr))
			} else {
				rest = append(rest, one(o.node, fr))
			}
		}
		for _, s := range o.segs[:max(len(o.segs)-1, 0)] {
			if c := o.culprit(s); s.serverClosed && c < s.sent {
				closers = append(closers, one(o.node, o.frames[c]))
			}
		}
	}
	return append(append(first, closers...), rest...)
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
