// Package producerstate is the per-partition producer table of an
// idempotent Kafka producer: for every producer id it keeps the epoch and
// the last few batches (Kafka keeps five), and decides whether a new batch
// is in sequence, an exact retry, fenced, or out of order.
//
// The package is a pure state machine. It reads batch headers and returns
// verdicts; it never touches the log, the clock, or the network, and no
// output depends on randomness or map iteration order. Every replica of a
// partition that feeds it the same headers in the same order reaches the
// same table, byte for byte.
//
// # The caller's duties
//
// A Table is not safe for concurrent use. The partition FSM owns one per
// partition and drives it from raft Apply, which is serial:
//
//  1. Start from New(DefaultWindow) for an empty partition, from Decode of
//     the bytes AppendEncode produced for a snapshot, or from Rebuild over
//     the stored batch headers in log order.
//  2. For each produced batch, call Validate with its header and act on the
//     verdict, as the list below says. Validate does not change the table.
//  3. After appending a batch Validate called Append, call Record with its
//     header, BaseOffset set to the offset the batch was given. Record
//     trusts that verdict and does not check sequences. Handle the batches
//     of one request one at a time, Validate then Record, so that a later
//     batch is judged against the earlier ones.
//  4. To snapshot while Apply goes on, Clone the table in the FSM's Snapshot
//     call (serial with Apply) and encode the clone later, in Persist, with
//     AppendEncode.
//
// What each verdict asks of the caller:
//
//   - Append: assign the next offset, append the batch, then Record it.
//   - Duplicate: append nothing; answer with Result.Original.BaseOffset,
//     the offset the first copy of the batch was given.
//   - Fenced: append nothing; answer INVALID_PRODUCER_EPOCH.
//   - OutOfOrder: append nothing; answer OUT_OF_ORDER_SEQUENCE_NUMBER.
//   - TxnStateInvalid: append nothing; answer INVALID_TXN_STATE.
//   - CoordinatorFenced (markers only): write nothing; answer
//     TRANSACTION_COORDINATOR_FENCED.
//
// # Rules
//
// Validate applies, in this order:
//
//   - A batch without a producer id (ProducerID < 0) is not idempotent,
//     and a control batch (a transaction marker, which only the broker
//     writes) carries no sequence: Append. Record ignores both.
//   - A negative producer epoch is lower than every epoch: Fenced.
//   - An epoch lower than the one recorded for the producer: Fenced.
//   - A malformed sequence range (BaseSequence < 0, or a LastOffsetDelta
//     that is negative or would make the count overflow): OutOfOrder.
//   - The recorded epoch and a sequence range (first, last) equal to a
//     retained batch: Duplicate, carrying that batch.
//   - An unknown producer, or an epoch higher than the recorded one: the
//     first sequence must be 0. Record then starts a fresh window under
//     the new epoch.
//   - The recorded epoch: the first sequence must follow the last retained
//     one, wrapping from MaxInt32 to 0.
//   - Anything else (a gap, an overlap, a retry older than the window):
//     OutOfOrder, with Result.Expected the sequence that would have been
//     accepted.
//
// Record appends the batch to the producer's window and drops the oldest
// batch beyond the window size.
//
// # Unknown producers
//
// An entry lives until its owner calls Expire (producer.id.expiration.ms,
// with the leader's clock carried in a command). So a producer the table
// does not know has never had a batch appended to this partition, or has
// been idle past the expiration; either way its first batch must have
// sequence 0, else it is OutOfOrder with Expected 0, and the producer
// starts over. Apache Kafka instead accepts any sequence from an unknown
// producer. Trimming the log (retention, DeleteRecords) removes nobody.
//
// SetLimit bounds the table: a new producer's batch is TableFull while the
// table is at the limit, so a client cannot grow it without end.
//
// Producers may not send control batches; reject them before Validate
// (record.CheckProduce does).
//
// # Transactions
//
// The table also holds the partition's side of Kafka transactions (as
// Kafka's ProducerStateManager does):
//
//   - Record of a transactional batch (attribute bit 4) opens the
//     producer's transaction at the batch's offset unless one is open; the
//     oldest open transaction's first offset is FirstUnstableOffset, and
//     the last stable offset is the smaller of it and the high watermark.
//   - Validate answers TxnStateInvalid for a batch that is not
//     transactional from a producer whose transaction is open.
//   - A marker (a control batch the broker writes for the transaction
//     coordinator) goes through ValidateMarker, then, once written,
//     RecordMarker: an epoch below the recorded one is Fenced, a
//     coordinator epoch below the last marker's CoordinatorFenced. A
//     marker ends the open transaction, if any (a marker with none is
//     still written, as in Kafka), and an ABORT adds it to the aborted
//     transactions index (AbortedTxns, AbortedIn). A marker's epoch
//     becomes the producer's; a new one empties the window.
//   - Expire keeps producers whose transaction is open; TrimAborted drops
//     the index entries below a new log start offset.
//
// Rebuilding from the log replays markers with RecordMarker and batches
// with Record, in log order.
package producerstate
