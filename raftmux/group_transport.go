package raftmux

import (
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

	closeOnce sync.Once
	closed    chan struct{} // closed by Close; fails this group's waiting heartbeats
}

var (
	_ raft.Transport   = (*GroupTransport)(nil)
	_ raft.WithClose   = (*GroupTransport)(nil)
	_ raft.WithPreVote = (*GroupTransport)(nil)
)

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
	addr := string(target)
	if t.addrs != nil {
		// NetworkTransport logs and falls back to target on an error; so do
		// we, quietly, as the fallback is what raft itself stored.
		if a, err := t.addrs.ServerAddr(id); err == nil {
			addr = string(a)
		}
	}
	r, err := t.m.heartbeat(t, addr, args)
	if errors.Is(err, errLegacyPeer) {
		return t.NetworkTransport.AppendEntries(id, target, args, resp)
	}
	if err != nil {
		return err
	}
	*resp = r
	return nil
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
