package broker

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/raftmux"
)

// raftView is what heartbeatGuard reads of its group's raft
// (*raft.Raft satisfies it).
type raftView interface {
	CurrentTerm() uint64
	State() raft.RaftState
}

// heartbeatGuard is a partition group's transport: the Mux's, except that
// a heartbeat raft can only answer after a disk write runs off the Mux's
// heartbeat frame.
//
// The Mux answers the coalesced heartbeats of one frame (every group a
// peer leads with a replica here) one after another. raft's heartbeat
// handler is quick, except when the heartbeat's term is newer than the
// replica's or the replica is not a follower (a candidate, or a deposed
// leader): then it persists the term first (a bbolt commit and fsync)
// before answering. When hundreds of groups elect at once, hundreds of
// such heartbeats queue in the same frames, each well under the Mux's
// per-handler limit (100 ms) but adding up to seconds per frame: every
// other group's heartbeats in those frames come too late, their
// followers start elections and their leaders step down, which makes
// more such heartbeats (the new-topic election storm; 1000 groups never
// settled, see replicas.go). The guard runs such a heartbeat in a
// goroutine of its own and returns at once; the Mux answers that one
// heartbeat "no response" (raft retries within its backoff), and the
// rest of the frame goes on. A heartbeat raft answers without a write is
// handled inline, as before. At most one guarded heartbeat per group runs
// in the background; while it does, further ones that would write are
// answered errHeartbeatBusy at once.
type heartbeatGuard struct {
	*raftmux.GroupTransport

	view atomic.Pointer[raftView] // nil until the group's raft exists: all inline
	busy atomic.Bool              // a heartbeat is being handled in the background
	wg   sync.WaitGroup           // the background heartbeat, awaited by Close

	mu     sync.Mutex // guards closed and orders every wg.Add before Close's wg.Wait
	closed bool       // Close has begun: no more background heartbeats
}

// errHeartbeatBusy answers a heartbeat that would wait behind the
// group's previous one; the leader retries.
var errHeartbeatBusy = errors.New("broker: the group is still handling a heartbeat that persists its term")

func newHeartbeatGuard(t *raftmux.GroupTransport) *heartbeatGuard {
	return &heartbeatGuard{GroupTransport: t}
}

// watch tells the guard which raft to read; until then every heartbeat is
// handled inline.
func (g *heartbeatGuard) watch(v raftView) { g.view.Store(&v) }

// SetHeartbeatHandler implements raft.Transport.
func (g *heartbeatGuard) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil {
		g.GroupTransport.SetHeartbeatHandler(nil)
		return
	}
	g.GroupTransport.SetHeartbeatHandler(g.wrap(cb))
}

// wrap returns cb guarded as described on heartbeatGuard.
func (g *heartbeatGuard) wrap(cb func(rpc raft.RPC)) func(rpc raft.RPC) {
	return func(rpc raft.RPC) {
		if !g.writes(rpc) {
			cb(rpc)
			return
		}
		if !g.busy.CompareAndSwap(false, true) {
			// The previous one still waits for the disk; this one would
			// wait behind it.
			rpc.Respond(nil, errHeartbeatBusy)
			return
		}
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			g.busy.Store(false)
			rpc.Respond(nil, raft.ErrTransportShutdown)
			return
		}
		g.wg.Add(1)
		g.mu.Unlock()
		go func() { // ends when raft has handled the heartbeat (or shut down)
			defer g.wg.Done()
			defer g.busy.Store(false)
			cb(rpc)
		}()
	}
}

// writes reports whether raft will persist a term before answering rpc.
func (g *heartbeatGuard) writes(rpc raft.RPC) bool {
	v := g.view.Load()
	if v == nil {
		return false
	}
	req, ok := rpc.Command.(*raft.AppendEntriesRequest)
	if !ok {
		return false
	}
	return req.Term > (*v).CurrentTerm() || (*v).State() != raft.Follower
}

// Close implements raft.WithClose: the Mux's transport closes, then Close
// waits for a heartbeat still handled in the background (raft has shut
// down by then, so it returns promptly); a heartbeat whose handler the Mux
// was already running when Close began is refused with
// raft.ErrTransportShutdown instead of starting another.
func (g *heartbeatGuard) Close() error {
	err := g.GroupTransport.Close()
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
	return err
}

var (
	_ raft.Transport   = (*heartbeatGuard)(nil)
	_ raft.WithClose   = (*heartbeatGuard)(nil)
	_ raft.WithPreVote = (*heartbeatGuard)(nil)
)
