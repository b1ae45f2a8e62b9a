// Package groupcoord is the group coordinator of one __consumer_offsets
// partition: Kafka's classic consumer group protocol (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup), KIP-848's consumer group protocol
// (ConsumerGroupHeartbeat, ConsumerGroupDescribe), KIP-932's share group
// membership (ShareGroupHeartbeat, ShareGroupDescribe) and the offset and
// group admin APIs, for the groups whose ids hash to the partition.
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
//
// # KIP-848 consumer groups
//
// A consumer group's whole state is in the View, as Kafka's records
// store it: the group epoch, each member's subscription, the target
// assignment and its epoch, each member's current assignment (member
// epoch, previous epoch, assigned partitions and those it must revoke).
// A heartbeat takes its group's turn, computes from the View what
// changes (a new group epoch when subscriptions or the subscribed
// topics change, a new target assignment from the "uniform" or "range"
// assignor when the group epoch is ahead of it, the member's next
// current assignment as Kafka's CurrentAssignmentBuilder computes it),
// writes those records through the Log and answers once they are
// applied. Only session and revocation timers, on the leader's clock,
// are the Coordinator's own; a new leader restarts them for every member,
// so members carry on across a failover in their epochs. As in Kafka 4.0,
// an empty group changes protocol either way, and, as
// group.consumer.migration.policy allows, a KIP-848 member joining a
// classic group with members upgrades it (its classic members go on
// through JoinGroup, SyncGroup and Heartbeat inside the consumer group),
// and the group is classic again when its last KIP-848 member leaves.
//
// # KIP-932 share groups
//
// A share group's membership is kept the same way, in Kafka's share
// group records (group epoch, member subscriptions, target assignment
// from Kafka's "simple" assignor, current assignments), with a session
// timer per member on the leader. Members never revoke: a member takes
// its new target on its next heartbeat. A group id is one kind of group
// only; the share APIs answer GROUP_ID_NOT_FOUND for another kind, and
// the classic and consumer APIs do for a share group (JoinGroup
// INCONSISTENT_GROUP_PROTOCOL). Which records each member may consume
// (ShareFetch, ShareAcknowledge) is not this package's: View.ShareMember
// and View.GroupType let that part check a member and a group id.
package groupcoord
