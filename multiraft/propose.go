package multiraft

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Proposal is a command on its way through Raft.
type Proposal struct {
	f   raft.Future // an ApplyFuture
	err error
	// start is when it was proposed; onCommit, if set, is the Host's
	// Config.OnCommit.
	start    time.Time
	onCommit func(time.Duration)
	// storage is the group's StorageErr, read when raft fails the
	// proposal with an error of its own.
	storage func() error
}

// Propose queues cmd for replication, in call order, and returns at once
// unless the queue is full (timeout bounds that wait). Wait gives the
// outcome.
func (g *Group) Propose(cmd []byte, timeout time.Duration) Proposal {
	if g.raft.State() != raft.Leader {
		return Proposal{err: ErrNotLeader}
	}
	p := Proposal{onCommit: g.h.onCommit, storage: g.StorageErr}
	if p.onCommit != nil {
		p.start = time.Now()
	}
	p.f = g.raft.Apply(cmd, timeout)
	return p
}

// Wait blocks until the command is applied on this member, and returns
// the Raft index it was applied at and what the FSM's Apply returned; or an
// error: ErrNotLeader, ErrMaybeCommitted, ErrEnqueueTimeout or
// ErrGroupClosed.
func (p Proposal) Wait() (index uint64, response any, err error) {
	if err := p.waitErr(); err != nil {
		return 0, nil, err
	}
	if p.onCommit != nil {
		p.onCommit(time.Since(p.start))
	}
	af := p.f.(raft.ApplyFuture)
	return af.Index(), af.Response(), nil
}

// waitErr waits for the future and maps raft's errors to this package's.
func (p Proposal) waitErr() error {
	if p.err != nil {
		return p.err
	}
	err := p.f.Error()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrMaybeCommitted
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return ErrEnqueueTimeout
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrGroupClosed
	}
	if p.storage != nil {
		if serr := p.storage(); serr != nil { // raft passes the store's error on as text only
			return fmt.Errorf("%w: %w", ErrStorage, serr)
		}
	}
	return fmt.Errorf("multiraft: %w", err)
}

// Settle waits until this member, which must lead, has applied an entry
// of its own term, and with it every entry of earlier terms: a new leader
// applies its predecessors' entries only once an entry of its term (the
// one raft appends on election) commits, and the FSM has applied them
// (awaitFSM). It waits on no raft future directly, so it always ends:
// with ctx, when the group closes
// (ErrGroupClosed), or when the member stops leading (ErrNotLeader).
func (g *Group) Settle(ctx context.Context) error {
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
	term, target := uint64(0), uint64(0)
	for {
		if g.raft.State() != raft.Leader {
			return ErrNotLeader
		}
		if t := g.raft.CurrentTerm(); t != term {
			term, target = t, 0 // a new term: look for its first entry again
		}
		if target == 0 {
			if last, err := strconv.ParseUint(g.raft.Stats()["last_log_term"], 10, 64); err == nil && last == term {
				target = g.raft.LastIndex() // at or after this term's first entry
			}
		}
		if target > 0 && g.raft.AppliedIndex() >= target {
			return g.awaitFSM(ctx)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-g.stop:
			return ErrGroupClosed
		case <-tick.C:
		}
	}
}

// awaitFSM returns once the FSM has applied every entry raft counts as
// applied: raft counts an entry applied as soon as it queues it for the
// FSM, and answers a barrier only after the FSM has taken everything
// queued before it. The wait ends with ctx or the group too.
func (g *Group) awaitFSM(ctx context.Context) error {
	f := g.raft.Barrier(g.changeTimeout(ctx))
	done := make(chan error, 1)
	go func() { done <- f.Error() }() // ends when raft answers, which it does at shutdown too
	select {
	case err := <-done:
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotLeader
		}
		if errors.Is(err, raft.ErrRaftShutdown) {
			return ErrGroupClosed
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-g.stop:
		return ErrGroupClosed
	}
}

// settlePoll is how often Settle looks at raft's indexes.
const settlePoll = 2 * time.Millisecond
