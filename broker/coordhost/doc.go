// Package coordhost hosts a node's group and transaction coordinators: one
// group coordinator (groupcoord) for each partition of __consumer_offsets
// the node leads and one transaction coordinator (txncoord) for each
// partition of __transaction_state, each started once its partition's new
// leader has settled and closed when the leadership ends. It also keeps
// the node's own state of every replica (State: the views the internal
// topics' records build, and the partition-verification memory of
// KIP-890), writes the transaction coordinators' markers, sweeps pending
// transactional offset commits whose transaction is over, and expires
// offsets and transactional ids on the node's clock.
//
// It is one of the broker's rooms (docs/architecture.md): it knows the rest
// of the node only through Deps, and never holds the node.
//
// A caller's duties, in order:
//
//  1. New makes the Host; nothing runs yet.
//  2. The replica host (broker/replicas) is wired with Attach as its
//     Deps.Attach and Host.OnLeader as its Deps.OnLeader: each replica
//     opens with its State filled, and a leadership change starts or
//     closes its partition's coordinator.
//  3. ExpireOffsets and ExpireTransactionalIDs, called on the node's
//     clock, make the coordinators' proposals; they must return before
//     Close.
//  4. Close, while the replicas still run (a coordinator's pending writes
//     are resolved by its running Raft group), closes every coordinator
//     and the marker writer; no coordinator starts after it.
//  5. Once the replicas are closed (no leadership change can come),
//     Wait waits for the goroutines that load and close coordinators.
package coordhost
