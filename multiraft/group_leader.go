package multiraft

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Settle waits until this member, which must lead, has applied an entry
// of its own term, and with it every entry of earlier terms: a new leader
// applies its predecessors' entries only once an entry of its term (the
// one raft appends on election) commits, and the FSM has applied them
// (awaitFSM). It waits on no raft future directly, which a shutdown can
// leave unanswered, so it always ends: with ctx, when the group closes
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

// Snapshot takes a snapshot now (raft also takes them on its own, see
// Timing). Having nothing new to snapshot is not an error.
func (g *Group) Snapshot() error {
	if err := g.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return err
	}
	return nil
}

// TransferLeadership hands this member's leadership to node and waits for
// the outcome or ctx. It does nothing unless this member leads.
func (g *Group) TransferLeadership(ctx context.Context, node int32) error {
	if g.raft.State() != raft.Leader {
		return nil
	}
	addr := fmt.Sprintf("unknown-%d", node)
	if g.h.resolve != nil {
		if a, ok := g.h.resolve(node); ok {
			addr = a
		}
	}
	f := g.raft.LeadershipTransferToServer(ServerID(node), raft.ServerAddress(addr))
	done := make(chan error, 1)
	go func() { done <- f.Error() }() // ends when raft resolves the future
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
