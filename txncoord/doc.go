// Package txncoord is the transaction coordinator of one
// __transaction_state partition: InitProducerId for transactional ids,
// AddPartitionsToTxn, AddOffsetsToTxn and EndTxn, for the transactional
// ids that hash to the partition.
//
// It has two parts, like groupcoord. The View is the partition's
// materialised state, every transactional id's metadata (producer id and
// epoch, state, partitions, timeout, timestamps), built by applying the
// partition's records (Kafka's TransactionLogKey and TransactionLogValue)
// in log order; it is deterministic and knows nothing of clocks: the
// timestamps are the leader's, written in the records. The Coordinator
// runs on the partition's leader: it validates requests against the View,
// writes each state change as a record through a Log (nothing is
// acknowledged before the Log has committed it), and drives the two-phase
// end of a transaction: PrepareCommit or PrepareAbort, then the markers on
// every partition of the transaction (Markers), then CompleteCommit or
// CompleteAbort. When the producer's next AddPartitionsToTxn already
// waits for the markers, it writes the Complete state and its own Ongoing
// state in one Append.
//
// # The caller's duties
//
//  1. Every replica of the partition keeps a View: its state machine calls
//     View.Apply for each record of each committed entry, in order, and
//     View.Reset before the log is fed again from its start.
//  2. When a replica becomes leader and has applied every entry of earlier
//     terms, it calls New with a Log that appends to the partition and
//     returns once the records are applied to that View, the Markers that
//     reach every partition's leader, and the leader's epoch (the
//     coordinator epoch the markers carry). New completes every
//     transaction it finds in a Prepare state. Until New returns, the
//     broker answers COORDINATOR_LOAD_IN_PROGRESS.
//  3. The broker routes each request for the partition's transactional ids
//     to the Coordinator's methods.
//  4. When the replica loses its leadership, it calls Close; requests are
//     then answered NOT_COORDINATOR. The next leader's Coordinator starts
//     from its View and finishes what was in flight.
package txncoord
