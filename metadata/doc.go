// Package metadata is the state machine of the cluster-metadata Raft group,
// of which every node is a member: the cluster id, registered brokers,
// topics with their replica placement and last reported leaders, and
// producer ids; and dynamic configs (topic overrides and cluster-wide
// broker defaults). It holds no I/O and no Raft wiring; it is deterministic
// (no clock, randomness or map order reaches a state, a result, an encoding
// or a placement), so every member holds the same state at the same index.
//
// A caller's duties, in order:
//
//  1. Give NewFSM to raft.NewRaft for the metadata group on every node.
//  2. When the group first has a leader, propose Encode(InitCluster{id})
//     before anything else; every other command fails with
//     ErrClusterNotInitialized until it is applied. Repeating it with the
//     same id is harmless, so each bootstrapping node may propose it.
//  3. Have each node propose RegisterBroker with its addresses once it can
//     reach the group, and again if they change.
//  4. To create a topic, take State(), compute the assignment with
//     Place(live broker ids, state.Load(), partitions, rf) and propose
//     CreateTopic. Apply validates it again against the state at its log
//     position, so races between proposers resolve the same everywhere.
//     To answer validate_only, call state.Apply on the current state.
//  5. When a partition group's leader wins an election, it proposes
//     SetPartitionLeader with its Raft term as the epoch. Older reports are
//     ignored, so reports may be retried and may race.
//  6. Serve InitProducerId with AllocateProducerID.
//  7. Serve AlterConfigs with AlterConfigs (the whole new map of a topic's
//     overrides, or of the cluster-wide dynamic broker defaults); for
//     IncrementalAlterConfigs compute the new map from the current state.
//     Apply validates every entry with package topicconfig.
//  8. Serve AlterUserScramCredentials with AlterScramCredentials: the
//     proposer salts and hashes passwords (StoredKey, ServerKey); Apply
//     checks and stores them per user, all or nothing for each user.
//  9. The raft ApplyFuture's Response() is the command's result value (its
//     type is named in each command's doc) or an error value; test with a
//     type assertion to error first, then errors.Is / errors.As against the
//     sentinels and typed errors of errors.go, which name their Kafka codes.
//  10. Read with State(), which is an immutable *Snapshot, and wait for
//     changes with WaitFor or Watch. Every node answers Metadata from its
//     local copy; a follower may lag the leader by a few entries.
//  11. Stamp the node's cluster-wide partition limit on CreateTopic and
//     CreatePartitions (MaxClusterPartitions); Apply enforces it.
//  12. Have each node remove its replicas of the topics TopicDeleted names
//     and then propose ReplicasRemoved for those of
//     DeletedTopicsToReport(itself) of which nothing is left on its disk,
//     so that the deleted ids are forgotten (deleted.go).
//  13. Serve the delegation token APIs with CreateDelegationToken (the
//     proposer derives the HMAC from the shared secret and stores only its
//     SCRAM credentials) and UpdateDelegationToken, stamped with the
//     proposer's clock; have the metadata leader propose
//     ExpireDelegationTokens with its clock when HasExpiredDelegationTokens
//     (dtoken.go).
//  14. Serve AlterClientQuotas with AlterClientQuotas, after checking each
//     entity on its own with CheckQuotaAlteration (the command is all or
//     nothing); brokers that enforce quotas read them with ClientQuota,
//     which resolves Kafka's precedence (quota.go).
//
// Upgrades: commands are encoded with a one-byte type and a one-byte version
// and are read forever. A build that adds a type or a version must not
// propose it until every member runs a build that can read it: an older
// member would reject the entry that newer members apply, and their states
// would part. Snapshots carry their own version the same way.
package metadata
