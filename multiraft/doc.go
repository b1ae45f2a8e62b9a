// Package multiraft runs many hashicorp/raft groups on one node, over one
// TCP port: a partition's replica set and the cluster's metadata group are
// each a group, and a node may hold thousands.
//
// A caller's duties, in order:
//
//  1. Listen once per node (Config: the node id, the address to bind and
//     advertise, how to resolve other nodes' addresses, and Tuning).
//  2. WatchPeer every other node as gossip finds it, UnwatchPeer it when it
//     leaves. A watched node that is lost (its process ended or restarted)
//     is replaced at once as leader of every group it led that has a member
//     here (failover.go).
//  3. Open each group from a GroupSpec: name, members in order of
//     preference, directory, Timing and state machine. Open the groups that
//     arrive together (a new topic's partitions) in one batch and pass the
//     new ones to ReleaseCampaigns, so that their preferred members lead
//     from the start without an election storm (campaign.go).
//  4. Propose on a group's leader; read Leader, Epoch and IsLeader
//     anywhere; GroupSpec.OnLeader tells of leadership changes. Leadership
//     returns to each group's preferred member when its node is up
//     (Tuning.RebalanceInterval).
//  5. Other internal protocols run as services on the same port: Listen
//     for a name, and peers Dial it.
//  6. To stop gracefully, HandOver every leadership, Close every group,
//     then Close the Host, which closes the node-wide Raft log store
//     (Config.LogDir) last. Closing the Host first instead makes the node go
//     silent at once, as a crash would; the log store then stays open
//     until the last pebble group is closed.
//  7. To delete a group for good (a deleted partition), Close it and
//     RemoveState its name and dir.
//
// The log stores. Each group keeps its Raft log and stable state in the
// store GroupSpec.LogStore names: a bbolt file or a raft-wal directory of
// its own, or its key range of the one Pebble DB of the node, whose
// commits from all groups share each WAL fsync (logstore.go,
// pebblelog.go).
//
// The transport. Each node dials one yamux session to each peer it talks
// to and calls the peer only over that session; the peer's calls come
// over the session the peer dialed. A session starts with a handshake that
// carries the acceptor's incarnation (random at each start), which tells a
// restarted peer from a broken connection. Raft RPCs travel as calls on
// pooled streams, one call at a time per stream, in one frame format
// (wire.go); with Timing.MaxInflightAppends, a follower's AppendEntries go
// one after another on a stream of their own without waiting for answers
// (pipeline.go). Heartbeats, most of an idle node's traffic, are coalesced per
// peer into heartbeat frames (heartbeat.go). A session that ends is
// redialed on next use; a watched peer's is redialed at once.
//
// Every goroutine the package starts is owned by the Host or the Group
// that started it, and ends by their Close; the node-wide log store's
// (its write-caching flusher, Pebble's own) end when it closes.
package multiraft
