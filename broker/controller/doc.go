// Package controller is a node's member of the metadata Raft group and the
// duties that go with it: proposing metadata commands wherever the leader
// is (forwarded over the Raft port's "rpc/meta" service), answering the
// commands peers forward when this node leads, and, on the leader, the
// metadata duties: bootstrapping the group, the broker registry, SCRAM
// users from the config, the producer-id key and self-healing. It also
// sends this node's reports about itself: the partitions it has come to
// lead and the deleted topics whose replicas it has removed.
//
// It is one of the broker's rooms (docs/architecture.md): it knows the rest
// of the node only through Deps, and never holds the node.
//
// A caller's duties, in order:
//
//  1. Create the metadata FSM (metadata.NewFSM) early: the node's address
//     book reads it before any group opens.
//  2. New opens the group, registers the RPC service and starts answering
//     forwarded commands and sending leader reports.
//  3. StartDuties, once the node's own parts are up, starts the metadata
//     duties loop, which Deps.MemberEvents wakes.
//  4. Cancelling New's context stops the loops; Close then closes the
//     group and waits for every goroutine the Controller started.
package controller
