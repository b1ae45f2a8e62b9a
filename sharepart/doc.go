// Package sharepart is the state of one share partition of KIP-932: the
// records of a topic partition that one share group has delivered, is
// delivering, or has done with. It is a pure core: the caller passes the
// time, the partition's log bounds and the member; it persists what
// Snapshot returns; it serialises every call.
//
// A caller's duties, in order:
//
//  1. Load a Partition from the last persisted Snapshot (Load), or start a
//     new one at the offset share.auto.offset.reset picks (New).
//  2. Call ExpireLocks with the leader's clock before serving a request,
//     then Acquire, Acknowledge or ReleaseMember.
//  3. When Dirty reports a change, write Snapshot through the
//     __share_group_state partition (EncodeKey, EncodeValue) and answer the
//     client only once it is committed. If the write fails, drop the
//     Partition and Load it again from the persisted state.
//
// The persisted Snapshot holds acquired records as Available with their
// delivery count, so a new leader redelivers exactly the records that
// were in flight, counted once more, and keeps every acknowledgement.
package sharepart
