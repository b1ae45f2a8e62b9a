package raftmux

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// GroupTransport is one raft group's transport on a Mux: a
// raft.NetworkTransport on the group's own channel, except that heartbeats
// to peers are coalesced per peer with every other group's (see the package
// doc). Every other RPC, pipelining, snapshots, the Consumer channel and
// address encoding are the embedded NetworkTransport's.
type GroupTransport struct {
	*raft.NetworkTransport

	m       *Mux
	group   string
	timeout time.Duration
	addrs   raft.ServerAddressProvider // nil: use the target as given

	handler atomic.Pointer[func(raft.RPC)] // raft's heartbeat handler; nil until set
	busy    atomic.Bool                    // a coalesced heartbeat is inside handler

	// consumer is what raft reads RPCs from: the NetworkTransport's,
	// passed on by forward, and those that peers sent on RPCChannel.
	consumer    chan raft.RPC
	forwardDone chan struct{} // closed when forward returns

	closeOnce sync.Once
	closed    chan struct{} // closed by Close; fails this group's waiting heartbeats
}

var (
	_ raft.Transport   = (*GroupTransport)(nil)
	_ raft.WithClose   = (*GroupTransport)(nil)
	_ raft.WithPreVote = (*GroupTransport)(nil)
)

// Consumer implements raft.Transport: the group's RPCs from its own
// connections and from RPCChannel.
func (t *GroupTransport) Consumer() <-chan raft.RPC { return t.consumer }

// forward passes the NetworkTransport's RPCs on to consumer until Close.
// It is owned by the transport (Close waits for it).
func (t *GroupTransport) forward() {
	defer close(t.forwardDone)
	in := t.NetworkTransport.Consumer()
	for {
		select {
		case rpc := <-in:
			select {
			case t.consumer <- rpc:
			case <-t.closed:
				// NetworkTransport.Close (next in Close) fails the RPC's
				// sender, who is waiting for a response that will not come.
				return
			}
		case <-t.closed:
			return
		}
	}
}

// Group is the group name given to Mux.Transport.
func (t *GroupTransport) Group() string { return t.group }

// SetHeartbeatHandler implements raft.Transport. cb answers coalesced
// heartbeats from peers as well as the group's own uncoalesced ones.
func (t *GroupTransport) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil {
		t.handler.Store(nil)
	} else {
		t.handler.Store(&cb)
	}
	t.NetworkTransport.SetHeartbeatHandler(cb)
}

// AppendEntries implements raft.Transport. A heartbeat (by raft's own
// definition) joins the next frame to the target's Mux and waits for its
// answer, at most the transport's Timeout; anything else, and every
// heartbeat when the peer's Mux does not serve coalesced heartbeats, goes
// over the group's own connection.
func (t *GroupTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if t.m.hbOff || !isHeartbeat(args) || !fitsFrame(args) {
		return t.NetworkTransport.AppendEntries(id, target, args, resp)
	}
	select {
	case <-t.closed:
		return raft.ErrTransportShutdown
	default:
	}
	r, err := t.m.heartbeat(t, t.peerAddr(id, target), args)
	if errors.Is(err, errLegacyPeer) {
		return t.NetworkTransport.AppendEntries(id, target, args, resp)
	}
	if err != nil {
		return err
	}
	*resp = r
	return nil
}

// peerAddr is the address of server id: the ServerAddressProvider's, or
// target. NetworkTransport logs and falls back to target on an error; so do
// we, quietly, as the fallback is what raft itself stored.
func (t *GroupTransport) peerAddr(id raft.ServerID, target raft.ServerAddress) string {
	if t.addrs != nil {
		if a, err := t.addrs.ServerAddr(id); err == nil {
			return string(a)
		}
	}
	return string(target)
}

// RequestVote implements raft.Transport over RPCChannel (see there), or
// over the group's own connection when the peer does not serve it.
func (t *GroupTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return electionRPC(t, id, target, rpcVote, args, resp, t.NetworkTransport.RequestVote)
}

// RequestPreVote implements raft.WithPreVote like RequestVote.
func (t *GroupTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return electionRPC(t, id, target, rpcPreVote, args, resp, t.NetworkTransport.RequestPreVote)
}

// TimeoutNow implements raft.Transport like RequestVote.
func (t *GroupTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return electionRPC(t, id, target, rpcTimeoutNow, args, resp, t.NetworkTransport.TimeoutNow)
}

// electionRPC sends one RPC of the given kind on RPCChannel, or with
// direct (the NetworkTransport's method) when coalescing is off or the peer
// does not serve RPCChannel.
func electionRPC[Req, Resp any](t *GroupTransport, id raft.ServerID, target raft.ServerAddress, kind byte, args *Req, resp *Resp,
	direct func(raft.ServerID, raft.ServerAddress, *Req, *Resp) error) error {
	if t.m.hbOff {
		return direct(id, target, args, resp)
	}
	err := t.m.call(t, t.peerAddr(id, target), kind, args, resp)
	if errors.Is(err, errLegacyPeer) {
		return direct(id, target, args, resp)
	}
	return err
}

// fitsFrame reports whether a heartbeat's byte fields fit the frame codec.
func fitsFrame(a *raft.AppendEntriesRequest) bool {
	return len(a.ID) <= hbMaxField && len(a.Addr) <= hbMaxField && len(a.Leader) <= hbMaxField
}

// Close implements raft.WithClose: the group's waiting heartbeats fail at
// once with raft.ErrTransportShutdown, peers' heartbeats for the group are
// refused with ErrUnknownGroup from now on, and the NetworkTransport closes.
// Idempotent.
func (t *GroupTransport) Close() error {
	t.closeOnce.Do(func() {
		close(t.closed)
		t.m.unregisterGroup(t)
	})
	<-t.forwardDone
	return t.NetworkTransport.Close()
}

// isClosed reports whether Close has been called.
func (t *GroupTransport) isClosed() bool {
	select {
	case <-t.closed:
		return true
	default:
		return false
	}
}

// StartElection hands the group's raft a TimeoutNow request, as a leader
// transferring its leadership does: raft becomes a candidate at once, even
// if it follows a leader, and asks for votes with the leadership-transfer
// flag, which voters grant although they still know a leader (their term
// and log checks apply as always, so this is as safe as any election). The
// node uses it to replace a leader whose process it knows has ended
// (Mux.WatchPeer) without waiting out raft's heartbeat timeout. It returns
// once raft has taken the request, or with ctx's error, or ErrClosed.
func (t *GroupTransport) StartElection(ctx context.Context) error {
	respCh := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{
		Command:  &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}},
		RespChan: respCh,
	}
	select {
	case t.consumer <- rpc:
	case <-t.closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case r := <-respCh:
		return r.Error
	case <-t.closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}
