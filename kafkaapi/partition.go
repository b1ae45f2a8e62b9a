package kafkaapi

import "context"

// Partition is the local replica of one partition, as the front end uses
// it. All methods must be safe for concurrent use and, except for the
// waits that Produce, ProduceVerified and WriteTxnMarker return and for
// Settle and DeleteRecords, must not block for long.
type Partition interface {
	// The log.

	// Produce starts appending one batch, which the server has checked
	// with record.CheckProduce and record.CheckRecordCount, and returns at
	// once. Batches passed to Produce on one Partition must be proposed
	// in call order: the server calls it in the order requests arrive on a
	// connection. The batch belongs to the backend after the call. Every
	// write commits through Raft whatever the request's acks (acks=1 waits
	// as acks=-1 does); the server alone handles acks=0, which gets no
	// answer. The returned ProduceWait reports the outcome; it may never
	// be called (the connection closed first).
	Produce(batch []byte) ProduceWait

	// Read returns whole committed batches (all below the high watermark),
	// carrying their assigned base offsets, starting with the batch that
	// holds offset and adding batches while the total stays within
	// maxBytes; the first batch is returned whole even if it alone is
	// larger than maxBytes (KIP-74). It returns nothing when offset equals
	// the high watermark. Errors: kerr.OffsetOutOfRange if offset is below
	// the log start offset or above the high watermark. The server drops
	// anything past a batch boundary, the byte limits or the high
	// watermark, so a generous Read is safe but wasteful.
	Read(offset int64, maxBytes int) ([]byte, error)

	// HighWatermark is the offset after the last record the partition's
	// state machine has applied: what consumers may read.
	HighWatermark() int64

	// LogStartOffset is the first offset still in the log.
	LogStartOffset() int64

	// Changed returns a channel that is closed when the high watermark
	// moves, or when anything else a waiting Fetch should re-check
	// changes (the replica lost leadership or was removed). Callers get
	// the channel before reading the state it guards, and call Changed
	// again after it fires.
	Changed() <-chan struct{}

	// WatchChanged calls wake once, when the channel seen (which Changed
	// returned) is closed, or at once if it already is. wake must be
	// quick and must not block (it may run under the partition's lock).
	// stop cancels a call not yet made. A waiting Fetch registers one
	// wake-up of its own with each of its partitions this way (as
	// Kafka's delayed fetches watch their partitions), instead of
	// selecting on every partition's channel.
	WatchChanged(seen <-chan struct{}, wake func()) (stop func())

	// Fetched is told the whole batches a Fetch returns to a consumer
	// from the partition (for traffic counts); it must be quick.
	Fetched(batches []byte)

	// DeleteRecords moves the log start offset up to offset, which the
	// server has checked is in [0, high watermark], on every replica and
	// returns the start after it, Kafka's low watermark. Errors:
	// kerr.PolicyViolation for a topic whose cleanup.policy has no
	// delete, kerr.InvalidTopicException for an internal topic,
	// kerr.NotLeaderForPartition; ctx carries the request's deadline.
	DeleteRecords(ctx context.Context, offset int64) (int64, error)

	// Lookups by timestamp and by leader epoch.

	// OffsetForTimestamp finds the first committed batch whose max
	// timestamp is at or after ts and returns its offset, timestamp and
	// leader epoch; ok is false if there is none.
	OffsetForTimestamp(ts int64) (found TimestampOffset, ok bool)

	// MaxTimestamp returns the offset and timestamp of the committed
	// record with the largest timestamp, for ListOffsets with timestamp
	// -3 (KIP-734); ok is false for an empty log, or if the partition
	// does not track it: ListOffsets then answers offset -1.
	MaxTimestamp() (found TimestampOffset, ok bool)

	// EpochEndOffset answers OffsetForLeaderEpoch from the leader epochs
	// stamped into the stored batches: the largest epoch at or below
	// epoch that a stored batch carries (-1 if none does) and the base
	// offset of the first batch whose epoch is larger (the log end offset
	// if none is). Epochs never decrease along the log.
	EpochEndOffset(epoch int32) (floor int32, end int64, err error)

	// Leadership.

	// IsLeader reports whether this replica is the partition's leader.
	IsLeader() bool

	// LeaderEpoch is the current leader epoch: the Raft term of the
	// partition's group.
	LeaderEpoch() int32

	// Settle returns once the leader has applied every entry of the terms
	// before its current one (a Raft leader applies them only once an
	// entry of its own term commits), or with the error to answer (for
	// example kerr.NotLeaderForPartition). The server settles a partition
	// before OffsetForLeaderEpoch, ListOffsets, DeleteRecords or a Fetch
	// past its high watermark is answered, so that none of them takes the
	// short log for the truth. It is cheap once settled; a replica whose
	// state is always current returns nil at once.
	Settle(ctx context.Context) error

	// Transactions: the partition side (KIP-98, KIP-890).

	// LastStableOffset is the offset below which every transaction on the
	// partition has ended (committed or aborted): the first offset of the
	// oldest open transaction, or the high watermark when none is open. It
	// is never above the high watermark read after it. A negative answer
	// means the partition keeps no transaction state: the high watermark
	// stands for it.
	LastStableOffset() int64

	// AbortedTxns returns the aborted transactions whose offsets overlap
	// [from, to), ordered by their ABORT markers' offsets. It covers every
	// abort below a LastStableOffset read before the call.
	AbortedTxns(from, to int64) []AbortedTxn

	// WriteTxnMarker starts writing m through the partition's replicated
	// log, like Produce (in call order, returning at once), and forgets
	// the producer's verification (TxnVerified). The wait reports the
	// marker's offset as BaseOffset, or an error:
	// kerr.InvalidProducerEpoch (an epoch older than the producer's),
	// kerr.TransactionCoordinatorFenced, kerr.NotLeaderForPartition,
	// kerr.RequestTimedOut, kerr.KafkaStorageError, or
	// kerr.UnsupportedForMessageFormat for a log that cannot hold markers.
	WriteTxnMarker(m TxnMarker) ProduceWait

	// TxnVerified reports whether producerID's ongoing transaction at
	// epoch is known to hold the partition (verified since the producer's
	// last marker, by this leader in its current epoch), and returns the
	// guard to produce under either way. The leader's memory of verified
	// transactions means a transaction is verified with its coordinator
	// once per partition rather than for every batch; a partition that
	// keeps none answers false, so every batch is verified.
	TxnVerified(producerID int64, epoch int16) (bool, TxnGuard)

	// ProduceVerified is Produce for a transactional batch of producerID
	// at epoch whose transaction holds the partition, as checked under
	// guard. It remembers the verification and proposes the batch, unless
	// a marker for the producer or a new leader epoch came after guard was
	// taken: then nothing is proposed and the wait answers
	// kerr.InvalidTxnState.
	ProduceVerified(batch []byte, producerID int64, epoch int16, guard TxnGuard) ProduceWait
}

// ProduceWait waits for the outcome of one Produce. It returns when the
// batch is committed and applied (for acks -1 and 1) or has failed, or when
// ctx is done (then with an error wrapping ctx.Err(), or kerr.RequestTimedOut).
// If the outcome is already known it should return it even when ctx is
// done. Expected errors: kerr.NotLeaderForPartition, kerr.UnknownTopicOrPartition,
// kerr.OutOfOrderSequenceNumber, kerr.InvalidProducerEpoch, kerr.RequestTimedOut.
// A duplicate of a batch still in the producer window is not an error: it
// returns the original batch's base offset.
type ProduceWait func(ctx context.Context) (ProduceResult, error)

// ProduceResult is the outcome of a successful Produce.
type ProduceResult struct {
	BaseOffset     int64 // offset of the batch's first record
	LogStartOffset int64 // the partition's log start offset after the append
	// LogAppendTime is the broker time stamped into the batch of a
	// LogAppendTime topic; -1 otherwise. The zero value is read as -1.
	LogAppendTime int64
}

// TimestampOffset is a ListOffsets answer.
type TimestampOffset struct {
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32 // epoch of the batch holding Offset; -1 if unknown
}

// AbortedTxn is an aborted transaction as a Fetch reports it: producer
// ProducerID's transactional records from FirstOffset up to its ABORT
// marker are to be skipped by read_committed consumers.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// TxnMarker is one COMMIT or ABORT marker for one partition.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool // COMMIT, else ABORT
	CoordinatorEpoch int32
	// TxnVersion is the transaction's version (WriteTxnMarkers v2): at 2
	// the marker's epoch is the one its EndTxn bumped.
	TxnVersion int16
}

// TxnGuard is what a Partition knew of a producer's verification when
// asked (TxnVerified); a batch produced under an outdated guard is
// refused.
type TxnGuard uint64
