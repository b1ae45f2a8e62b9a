// Package raftmux carries every Raft group of a node, and any number of
// named internal services, over one TCP port.
//
// Each connection starts with a small versioned header naming a channel:
// magic byte 0xA5, version 1, a big-endian uint16 name length, the name.
// The accepting Mux reads it in a goroutine of its own, under
// Config.HeaderTimeout, answers with one status byte and hands the
// connection to that channel's virtual net.Listener; a bad header or an
// unknown channel closes that connection only, and is counted in Stats. Raft groups use channels named RaftChannelPrefix+group; services
// pick their own names, such as "rpc/meta".
//
// A caller's duties, in order:
//
//  1. Listen once per node. Set Config.AdvertiseAddr when BindAddr is a
//     wildcard address such as 0.0.0.0: Addr is what raft stores as this
//     node's address, so peers must be able to dial it.
//  2. Per raft group, call Transport(group, cfg) and hand the result to
//     raft.NewRaft. A group has at most one open transport per Mux; every
//     replica of a group must use the same group name. raft.Shutdown closes
//     the transport, which unregisters the group and closes its
//     connections; other groups are not touched.
//  3. Per service, call Listener(name) and serve it; peers reach it with
//     Dial(ctx, addr, name). Close the listener to unregister the name.
//     Connections returned by Dial and Accept are the caller's to close.
//  4. Shut every raft group down, then Close the Mux. Close closes the port,
//     every virtual listener and every accepted connection, fails queued
//     heartbeats, and returns after the Mux's goroutines have ended
//     (including calls into raft heartbeat handlers that are still running).
//     A transport still open at that point stays quiet until it is closed.
//
// Heartbeats. Each raft leader sends every follower an empty AppendEntries
// every HeartbeatTimeout/10 or so; with hundreds of groups that is most of
// an idle node's traffic and CPU. A GroupTransport therefore does not send
// them over the group's own connection: a heartbeat (raft's own definition)
// joins a queue per peer address, and that peer's sender, owned by the Mux,
// waits Config.HeartbeatWindow after the first one and sends everything
// queued as one frame on one long-lived connection on HeartbeatChannel
// ("raft-hb", so no service may use that name). The
// peer calls each group's heartbeat handler (the one raft set with
// SetHeartbeatHandler) and answers every heartbeat in one frame, in order.
// A group the peer does not have open is answered ErrUnknownGroup; a
// handler that overruns Config.HeartbeatHandlerTimeout is abandoned and its
// heartbeat answered ErrNoHeartbeatResponse, so that one stuck group never
// holds up the others. A heartbeat waits at most its group's
// TransportConfig.Timeout; closing the group fails its waiting heartbeats at
// once; a lost connection fails the frame in flight and the next frame
// dials again. A peer whose Mux does not serve HeartbeatChannel (an older
// version, or Config.DisableHeartbeatCoalescing) gets heartbeats over each
// group's own connection, as before. Stats counts frames and heartbeats.
//
// Election RPCs. RequestVote, RequestPreVote and TimeoutNow of every group
// go over RPCChannel ("raft-rpc", also reserved): one connection per pair
// of peers and direction, dialed on first use, with any number of calls in
// flight, each answered when its group's raft has handled it. The peer
// hands each to its group's raft through the transport's Consumer channel
// (GroupTransport passes the NetworkTransport's RPCs on to the same
// channel). In a mass election a failed vote therefore costs no new
// connection. A group the peer does not have open within half a second
// (its members open it at about the same time) is answered
// ErrUnknownGroup, one whose raft does not take or answer the RPC within
// three quarters of its Timeout ErrNoRPCResponse; a peer without
// RPCChannel gets these RPCs over each group's own connections, as before.
// Stats counts them.
//
// Liveness. WatchPeer keeps one idle connection on LivenessChannel
// ("raft-live", also reserved) to a peer, which ends as soon as the peer's
// process does; Config.OnPeerLost then names the peer, and PeerUp says
// whether the connection is up. GroupTransport.StartElection hands a
// group's raft a TimeoutNow, so that a node can replace a lost peer's
// leaderships without waiting for raft's heartbeat timeout.
//
// File descriptors: each group's NetworkTransport keeps up to
// TransportConfig.MaxPool idle connections per peer, plus one per peer for
// pipelined replication, in each direction. With hundreds of groups, size
// the process's descriptor limit and the raft timeouts accordingly.
package raftmux
