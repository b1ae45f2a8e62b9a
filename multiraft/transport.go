package multiraft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/internal/frame"
)

// callBufs holds the buffers requests are encoded in: an AppendEntries
// carries up to MaxAppendEntries entries of up to a MiB each, and a new
// buffer of that size per call cost the leader a third of its CPU in
// zeroing memory at peak load. The pool empties at each GC, so an idle
// node keeps none.
var callBufs = sync.Pool{New: func() any { return new([]byte) }}

// snapshotTimeoutScale is how many snapshot bytes one CallTimeout covers
// (raft's NetworkTransport uses the same).
const snapshotTimeoutScale = 256 << 10

// transport is one group's raft.Transport on its Host. Heartbeats join the
// peer's next heartbeat frame (heartbeat.go); every other RPC is a call on
// a call stream of the session to the peer, and pipelined AppendEntries
// share a stream of their own (pipeline.go).
type transport struct {
	h     *Host
	g     *Group
	group string

	// consumer is what raft reads RPCs from: those peers sent, and the
	// TimeoutNow of StartElection.
	consumer   chan raft.RPC
	handler    atomic.Pointer[func(raft.RPC)] // raft's heartbeat handler; nil until set
	busy       atomic.Bool                    // a heartbeat of this group is being handled
	raft       atomic.Pointer[raft.Raft]      // the group's raft, once it runs
	view       atomic.Pointer[raftView]       // what the heartbeat guard reads of it; nil: handle inline
	throttled  sync.Map                       // raft.ServerID -> true: members catching up, paced (members.go)
	leaderSeen atomic.Pointer[leaderTerm]     // the newest term's leader an AppendEntries came from (leaderterm.go)
	// leaderCommit is the highest LeaderCommitIndex an AppendEntries
	// brought (Replication.Behind): any leader's is committed for good.
	leaderCommit atomic.Uint64

	// progress is the followers' progress while the group leads here.
	progress progress

	mu     sync.Mutex     // guards closed and orders bg.Add before Close's bg.Wait
	bg     sync.WaitGroup // heartbeats being handled, inline or in the background (heartbeat.go)
	closed chan struct{}  // closed by Close
	once   sync.Once
}

// raftView is what the heartbeat guard reads of a group's raft.
type raftView interface {
	CurrentTerm() uint64
	State() raft.RaftState
}

var (
	_ raftView         = (*raft.Raft)(nil)
	_ raft.Transport   = (*transport)(nil)
	_ raft.WithClose   = (*transport)(nil)
	_ raft.WithPreVote = (*transport)(nil)
)

// newTransport registers g on h and returns its transport.
func (h *Host) newTransport(g *Group) (*transport, error) {
	group := g.spec.Name
	t := &transport{h: h, g: g, group: group, consumer: make(chan raft.RPC), closed: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.groups[group] != nil {
		return nil, fmt.Errorf("%w: %q", ErrGroupExists, group)
	}
	h.groups[group] = t
	close(h.groupAdded)
	h.groupAdded = make(chan struct{})
	return t, nil
}

// lookupGroup returns the open transport of group, or nil.
func (h *Host) lookupGroup(group string) *transport {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.groups[group]
}

// awaitGroup returns the open transport of group, waiting up to d for it
// to open, or nil.
func (h *Host) awaitGroup(group string, d time.Duration) *transport {
	if t := h.lookupGroup(group); t != nil {
		return t // the usual case: no timer
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		h.mu.Lock()
		t, added := h.groups[group], h.groupAdded
		h.mu.Unlock()
		if t != nil {
			return t
		}
		select {
		case <-added:
		case <-timer.C:
			return nil
		case <-h.ctx.Done():
			return nil
		}
	}
}

func (t *transport) Consumer() <-chan raft.RPC     { return t.consumer }
func (t *transport) LocalAddr() raft.ServerAddress { return raft.ServerAddress(t.h.addr) }

// AppendEntries implements raft.Transport. A heartbeat (raft's own
// definition) joins the peer's next heartbeat frame.
func (t *transport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	var err error
	if isHeartbeat(args) && fitsHeartbeat(args) {
		err = t.heartbeat(t.peerAddr(id, target), args, resp)
	} else if err = t.pace(id, entryBytes(args)); err == nil {
		err = t.call(id, target, callAppendEntries, args, resp, nil, t.h.tun.CallTimeout)
	}
	if err == nil {
		var epoch uint64 // only a Quiesce heartbeat's answer needs it
		if args.Quiesce {
			_, epoch = t.Vouch(id, target)
		}
		t.progress.record(id, args, resp, time.Now(), epoch)
	}
	return err
}

func (t *transport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return t.call(id, target, callRequestVote, args, resp, nil, t.h.tun.CallTimeout)
}

func (t *transport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.call(id, target, callRequestPreVote, args, resp, nil, t.h.tun.CallTimeout)
}

func (t *transport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return t.call(id, target, callTimeoutNow, args, resp, nil, t.h.tun.CallTimeout)
}

// InstallSnapshot implements raft.Transport: the snapshot's bytes follow
// the request on the same stream, and the call may take one CallTimeout per
// snapshotTimeoutScale bytes.
func (t *transport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	timeout := max(t.h.tun.CallTimeout, t.h.tun.CallTimeout*time.Duration(args.Size/snapshotTimeoutScale))
	data = io.LimitReader(data, args.Size)
	if _, ok := t.throttled.Load(id); ok && t.h.catchUp != nil {
		data = pacedReader{r: data, t: t, id: id}
	}
	return t.call(id, target, callInstallSnapshot, args, resp, data, timeout)
}

func (t *transport) EncodePeer(id raft.ServerID, addr raft.ServerAddress) []byte {
	return []byte(t.peerAddr(id, addr))
}

func (t *transport) DecodePeer(b []byte) raft.ServerAddress { return raft.ServerAddress(b) }

// SetHeartbeatHandler implements raft.Transport.
func (t *transport) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil {
		t.handler.Store(nil)
		return
	}
	t.handler.Store(&cb)
}

// Close implements raft.WithClose (raft calls it at the end of Shutdown):
// the group's waiting heartbeats fail at once, peers' RPCs for the group
// are refused from now on, and Close waits for a heartbeat still handled
// in the background. Idempotent.
func (t *transport) Close() error {
	t.once.Do(func() {
		t.mu.Lock()
		close(t.closed)
		t.mu.Unlock()
		t.h.mu.Lock()
		if t.h.groups[t.group] == t {
			delete(t.h.groups, t.group)
		}
		t.h.mu.Unlock()
	})
	t.bg.Wait()
	return nil
}

func (t *transport) isClosed() bool {
	select {
	case <-t.closed:
		return true
	default:
		return false
	}
}

// peerAddr is the address of server id: Config.Resolve's, or target (what
// raft stored) when it does not know the node.
func (t *transport) peerAddr(id raft.ServerID, target raft.ServerAddress) string {
	if t.h.resolve != nil {
		if node, ok := nodeOf(id); ok {
			if a, ok := t.h.resolve(node); ok {
				return a
			}
		}
	}
	return string(target)
}

// call sends one RPC to the peer on a call stream (with data after the
// request, for a snapshot) and decodes the answer into resp.
func (t *transport) call(id raft.ServerID, target raft.ServerAddress, kind byte, req, resp any, data io.Reader, timeout time.Duration) error {
	if t.isClosed() {
		return raft.ErrTransportShutdown
	}
	p, err := t.h.peer(t.peerAddr(id, target))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	if err := p.acquireCall(kind, deadline); err != nil {
		return err
	}
	defer p.releaseCall(kind)
	st, fresh, err := p.callStream(deadline)
	if err != nil {
		return err
	}
	bp := callBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	if fresh {
		buf = appendOpen(buf, streamCalls, "")
	}
	if buf, err = appendRequest(buf, kind, t.group, req); err != nil {
		callBufs.Put(bp)
		_ = st.Close()
		return err
	}
	_ = st.SetDeadline(deadline)
	_, err = st.Write(buf)
	*bp = buf[:0] // yamux is done with buf once Write returns, also on a timeout
	callBufs.Put(bp)
	if err == nil && data != nil {
		_, err = io.Copy(st, data)
	}
	var body []byte
	if err == nil {
		body, err = frame.Read(st, 1, uint32(t.h.tun.MaxFrame))
	}
	if err != nil {
		_ = st.Close()
		return p.fail("call", timeoutAsCallTimeout(err))
	}
	_ = st.SetDeadline(time.Time{})
	t.h.live.answered(p.addr, st.Session(), time.Now())
	p.release(st)
	t.h.stats.callsSent.Add(1)
	return p.result(body, resp)
}

// result decodes a response frame's body into resp, or returns the error
// its status says.
func (p *peer) result(body []byte, resp any) error {
	switch status, payload := body[0], body[1:]; status {
	case statusOK:
		return decodePayload(payload, resp)
	case statusUnknownGroup:
		return ErrUnknownGroup
	case statusNoResponse:
		return ErrNoResponse
	case statusRemoteError:
		return &RemoteError{Msg: string(payload)}
	default:
		return p.fail("call", fmt.Errorf("%w: call status %d", ErrProtocol, status))
	}
}

// timeoutAsCallTimeout turns a network timeout into ErrCallTimeout.
func timeoutAsCallTimeout(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ErrCallTimeout
	}
	return err
}

// startElection hands the group's raft a TimeoutNow request, as a leader
// transferring its leadership does: raft becomes a candidate at once, even
// if it follows a leader, and asks for votes with the leadership-transfer
// flag, which voters grant although they still know a leader (their term
// and log checks apply as always, so this is as safe as any election). It
// returns once raft has taken the request, or with ctx's error, or
// ErrGroupClosed.
func (t *transport) startElection(ctx context.Context) error {
	respCh := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{
		Command:  &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}},
		RespChan: respCh,
	}
	select {
	case t.consumer <- rpc:
	case <-t.closed:
		return ErrGroupClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case r := <-respCh:
		return r.Error
	case <-t.closed:
		return ErrGroupClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}
