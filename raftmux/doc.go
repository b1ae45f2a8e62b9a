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
//     every virtual listener and every accepted connection, and returns
//     after the Mux's goroutines have ended. A transport still open at that
//     point stays quiet until it is closed.
//
// File descriptors: each group's NetworkTransport keeps up to
// TransportConfig.MaxPool idle connections per peer, plus one per peer for
// pipelined replication, in each direction. With hundreds of groups, size
// the process's descriptor limit and the raft timeouts accordingly.
package raftmux
