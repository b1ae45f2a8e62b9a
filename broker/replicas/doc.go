// Package replicas hosts a node's partition replicas: it opens the ones on
// disk at start, opens and removes replicas as the metadata assigns and
// deletes them, follows reassignments (the Raft membership steps on the
// partitions this node leads, and the replica lists of every group it
// holds), applies each topic's configs to its replicas (segment limits and
// write caching), and runs a leader's retention and producer expiry.
//
// It is one of the broker's rooms (docs/architecture.md): it knows the rest
// of the node only through Deps, and never holds the node. A Replica carries
// a value of the node's own per-replica state (type parameter E), which the
// node fills as the replica opens (Deps.Attach) and reads back through
// Replica.Extra; the replicas never look into it.
//
// A caller's duties, in order:
//
//  1. New makes the Set; nothing runs yet.
//  2. OpenFromDisk starts the replicas whose directories hold a
//     replica.json, before the metadata group is up.
//  3. Start launches the reconcile loop (opening and removing replicas as
//     the metadata changes) and the reassignment loop.
//  4. Retain and ExpireProducers, called on the node's clock, make the
//     leaders' proposals; they must return before Close.
//  5. Cancelling New's context stops the loops; Close then closes every
//     replica and waits for the loops.
package replicas
