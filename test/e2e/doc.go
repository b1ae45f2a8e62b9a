// Package e2e proves, against real node processes, that nothing a
// MiniKafka cluster acknowledged is lost or duplicated when nodes crash,
// pause or restart.
//
// It holds four parts, each usable alone:
//
//   - Cluster: three minikafka-node processes started from configs/
//     node1..3.yaml, with ports and data directories overridden by flags,
//     and the faults: Kill (SIGKILL), Pause/Resume (SIGSTOP/SIGCONT), Stop
//     (SIGTERM, graceful), Start, RollingRestart, KillAll; Leader finds a
//     partition's leader with Metadata requests.
//   - Workload: idempotent acks=all producers (package client) writing
//     records whose values name (producer, key, per-key sequence), and a
//     History of every attempt and its outcome.
//   - Check: a pure checker of a History against the partitions' contents.
//   - CompareReplicas and ReadReplicaLog: every replica's stored log,
//     read offline from the data directories of stopped nodes, must be
//     byte-identical.
//
// A test's duties, in order:
//
//  1. Build cmd/node once (BuildNode, from TestMain) and Start a Cluster
//     with its path; Start registers cleanup that kills every process
//     group, even when the test fails, and fails the test if a node exited
//     on its own.
//  2. CreateTopic, then StartWorkload with a History.
//  3. Inject faults; after each, restart what was killed and WaitReady.
//  4. Stop the Workload (it flushes, then closes its producers).
//  5. Verify: it reads every partition with a consumer and Checks the
//     History against it, waits until the replicas are in sync, stops
//     every node gracefully, then compares every replica's log offline
//     (ReadReplicaLog, CompareReplicas) and with what was read
//     (SameRecords).
//
// Consumer groups (TestGroupFailover) add two parts: Member, a franz-go
// group consumer in the test process that commits by hand and records
// every assignment, revocation, delivery and acknowledged commit in a
// GroupHistory (with the OffsetFetch answers the test asks for); and
// CheckGroup, a pure checker of a GroupHistory against the workload's
// History: nothing acknowledged unconsumed, nothing delivered below a
// commit in force, no committed offset going backwards, and every new
// round of members resuming at the committed offsets.
//
// Share groups (TestShareGroupFailover) add ShareMember, a stock franz-go
// share consumer (kgo.ShareGroup) that records in a ShareHistory every
// record delivered with its delivery count and every acknowledgement with
// the outcome the client reported (ShareAckCallback, after FlushAcks);
// and CheckShare, a pure checker of a ShareHistory against the workload's
// History: every record accepted successfully exactly once, none
// delivered again after its accept succeeded, delivery counts never
// repeating or going down.
//
// Exactly-once (TestExactlyOnceUnderFaults) adds Pipeline, a franz-go
// GroupTransactSession in the test process that copies an input topic to
// an output topic one transaction per poll and records every transaction
// and its outcome in a TxnHistory; WriteEndMarkers and ReadToEndMarkers,
// which read the output at either isolation level; and CheckTxn, a pure
// checker of the output against the input and the TxnHistory: every
// input output exactly once, in order per partition, every committed
// transaction's records visible and no aborted one.
//
// Every wait is bounded by a context; nothing sleeps a fixed time where a
// condition can be polled.
package e2e
