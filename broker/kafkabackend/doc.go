// Package kafkabackend is the Kafka backend of a node: it answers the
// Kafka front end (kafkaapi.Server, through kafkaapi.Backend) from the
// node's state. It reads the cluster from the local metadata copy and
// gossip, changes it through the metadata group (topics, partitions,
// configs, ACLs, SCRAM credentials, reassignments), hands out the node's
// partition replicas as kafkaapi.Partition, finds and creates the internal
// topics whose leaders coordinate groups and transactions, and verifies
// transactional batches with their coordinators (KIP-890).
//
// It is one of the broker's rooms (docs/architecture.md): it knows the rest
// of the node only through Deps, and never holds the node. Resolver, which
// resolves topics' configs, is shared with the node's wiring.
//
// A caller's duties, in order:
//
//  1. StaticConfigs gives the node's static configs under Kafka's names;
//     NewResolver makes the Resolver over them, once the metadata copy
//     exists.
//  2. New makes the Backend, before anything it serves may call it: the
//     Kafka server, and the coordinators that verify transactions through
//     it. It starts nothing and needs no Close.
//  3. The Deps must answer for as long as the Backend is called: the
//     Kafka server closes, and the coordinators stop, before the metadata
//     copy, the replicas and the coordinators close.
package kafkabackend
