// Package membership tells a MiniKafka node which nodes are alive and how
// to reach them, over hashicorp/memberlist gossip (SWIM failure detection).
//
// Every node advertises a small NodeMeta: its Kafka broker id, its Kafka
// address and its Raft/internal RPC address. Broker id N is memberlist node
// "node-N" (NodeName). The
// metadata must encode to at most MetaMaxSize (512) bytes, where memberlist
// would panic; New and UpdateMeta return ErrMetaTooLarge instead. Partition
// maps and other growing state belong in the metadata Raft group, not here.
//
// A caller's duties, in order:
//
//  1. New(cfg) binds the gossip port (TCP and UDP; port 0 picks a free one,
//     LocalAddr reports it) and starts a cluster of one. If cfg.OnEvent is
//     set it starts receiving events at once, this node's own EventJoin
//     first, possibly before New returns.
//  2. Join(ctx, seeds) meets the cluster. Every node may get the same seed
//     list: its own address is skipped, and a list of only itself means it
//     is the first node. Join retries until a seed answers or ctx ends, and
//     fails at once with ErrDuplicateID if another node already uses this
//     id from another address.
//  3. Members and Lookup read the current view at any time: Lookup gives
//     an alive node's addresses by its id.
//  4. To stop, Leave(ctx) and then Shutdown(). The others report EventLeave.
//     Shutdown without Leave looks like a crash: the others report EventFail
//     after the failure detection time (about 4.5 s with the defaults).
//     Shutdown waits for every goroutine this package started.
//
// OnEvent is called from one goroutine owned by the Membership, one event at
// a time, in the order memberlist reported the changes, and never while
// memberlist holds a lock; events queue meanwhile, so a slow callback delays
// later events but never gossip. It may call any method but Shutdown.
//
// A failed member is joined again every Config.ReconnectInterval until it
// answers, so two sides of a healed network partition, each of which saw
// the other fail, meet again: memberlist itself only talks to live members.
//
// A graceful leave is told apart from a failure by a leave intent that
// Leave gossips in the node's metadata before memberlist's leave message.
// A node that received the leave message but missed the intent (lost UDP
// packets) reports EventFail; a node that announced its leave and then
// crashed is reported as EventLeave.
package membership
