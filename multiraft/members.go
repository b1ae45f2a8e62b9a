package multiraft

import (
	"context"
	"io"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// Membership changes of a running group, for partition reassignment: a
// leader adds a node as a non-voter, waits until Progress shows it caught
// up, promotes it with AddVoter and removes the nodes leaving with
// RemoveServer. A node joining a group opens it with GroupSpec.Join.

// Throttle marks node as catching up (on) or not: while it is, what this
// member sends it as leader is paced by Tuning.CatchUpRate.
func (g *Group) Throttle(node int32, on bool) {
	if on {
		g.trans.throttled.Store(ServerID(node), true)
	} else {
		g.trans.throttled.Delete(ServerID(node))
	}
}

// pace waits until n bytes may be sent to id, if id is throttled. A
// request larger than the limiter's burst waits for a full burst.
func (t *transport) pace(id raft.ServerID, n int) error {
	lim := t.h.catchUp
	if lim == nil || n <= 0 {
		return nil
	}
	if _, ok := t.throttled.Load(id); !ok {
		return nil
	}
	ctx, cancel := context.WithCancel(t.h.ctx)
	defer cancel()
	go func() { // a closing group must not wait for its pace
		select {
		case <-t.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := lim.WaitN(ctx, min(n, lim.Burst())); err != nil {
		return err
	}
	t.h.stats.catchUpPaced.Add(uint64(n))
	return nil
}

// entryBytes is what an AppendEntries carries in entries.
func entryBytes(args *raft.AppendEntriesRequest) int {
	n := 0
	for _, e := range args.Entries {
		n += len(e.Data)
	}
	return n
}

// pacedReader is a snapshot's data, paced for a throttled member.
type pacedReader struct {
	r  io.Reader
	t  *transport
	id raft.ServerID
}

func (p pacedReader) Read(b []byte) (int, error) {
	if err := p.t.pace(p.id, len(b)); err != nil {
		return 0, err
	}
	return p.r.Read(b)
}

// Progress returns the highest index node's answers to this member's
// AppendEntries showed matching its log in the current term; ok is false
// when it has answered none (only a leader sends them).
func (g *Group) Progress(node int32) (match uint64, ok bool) {
	p := &g.trans.progress
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.peers[ServerID(node)]
	if f == nil {
		return 0, false
	}
	return f.Match, true
}

// LastIndex is the index of the last entry in this member's log.
func (g *Group) LastIndex() uint64 { return g.raft.LastIndex() }

// Configuration returns the voters and non-voters of the group's latest
// configuration, in its order.
func (g *Group) Configuration() (voters, nonvoters []int32, err error) {
	f := g.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, nil, err
	}
	for _, s := range f.Configuration().Servers {
		n, ok := nodeOf(s.ID)
		if !ok {
			continue
		}
		if s.Suffrage == raft.Voter {
			voters = append(voters, n)
		} else {
			nonvoters = append(nonvoters, n)
		}
	}
	return voters, nonvoters, nil
}

// AddVoter adds node, at addr, as a voter, or promotes it if it is a
// non-voter; only the leader can. It waits for the change to commit,
// bounded by ctx.
func (g *Group) AddVoter(ctx context.Context, node int32, addr string) error {
	return g.raft.AddVoter(ServerID(node), raft.ServerAddress(addr), 0, g.changeTimeout(ctx)).Error()
}

// RemoveServer removes node from the group; only the leader can. A leader
// that removes itself steps down once the change commits.
func (g *Group) RemoveServer(ctx context.Context, node int32) error {
	return g.raft.RemoveServer(ServerID(node), 0, g.changeTimeout(ctx)).Error()
}

// changeTimeout is how long a membership change may wait to be enqueued.
func (g *Group) changeTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return g.h.tun.CallTimeout
}

// SetMembers replaces the group's members in order of preference (see
// GroupSpec.Members), after a reassignment changed them. The Raft
// configuration is not touched: the leader changes that.
func (g *Group) SetMembers(members []int32) {
	m := slices.Clone(members)
	g.members.Store(&m)
}

// preference is the members SetMembers or the spec gave; nil for a group
// whose membership is managed at run time.
func (g *Group) preference() []int32 {
	if m := g.members.Load(); m != nil {
		return *m
	}
	return nil
}

// CaughtUp reports whether this member has applied every entry it knows
// to be committed and, unless it leads, heard from a leader within the
// last d: its state is as fresh as a follower's can be.
func (g *Group) CaughtUp(d time.Duration) bool {
	commit := g.raft.CommitIndex()
	if commit == 0 || g.raft.AppliedIndex() < commit {
		return false
	}
	return g.raft.State() == raft.Leader || time.Since(g.raft.LastContact()) <= d
}
