// Package groupcoord is the group coordinator of one __consumer_offsets
// partition: Kafka's classic consumer group protocol (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup) and the offset and group admin APIs,
// for the groups whose ids hash to the partition.
//
// It has two parts. The View is the partition's materialised state, the
// latest committed offsets and stored group metadata, built by applying
// the partition's records (Kafka's own record formats) in log order; it
// is deterministic and knows nothing of clocks. The Coordinator runs on
// the partition's leader: it keeps the live groups (members, generations,
// waiting requests, session and rebalance timers) and writes what must
// survive a failover, offsets and each stable or empty generation, as
// records through a Log. Nothing is acknowledged before the Log has
// committed it.
//
// # The caller's duties
//
//  1. Every replica of the partition keeps a View: its state machine
//     calls View.ApplyBatch (or Apply) for each committed entry, in
//     order, View.AppendSnapshot for a snapshot and View.Restore to
//     install one.
//  2. When a replica becomes leader and has applied every entry of
//     earlier terms, it calls New with a Log that appends to the
//     partition and returns once the records are applied to that View.
//     Until then the broker answers COORDINATOR_LOAD_IN_PROGRESS.
//  3. The broker routes the group requests for the partition's groups to
//     the Coordinator's methods, one call per request (per group for
//     DescribeGroups, DeleteGroups and OffsetFetch v8+), with a ctx that
//     ends when the connection closes. JoinGroup and SyncGroup block
//     until the group's rebalance lets them answer.
//  4. When the replica loses its leadership, it calls Close: waiting
//     requests are answered NOT_COORDINATOR, and so is everything after.
//     The next leader's Coordinator starts from its View: stable
//     generations carry on, rebalances in progress start over.
package groupcoord
