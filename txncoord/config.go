package txncoord

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Log is the __transaction_state partition a Coordinator writes to.
type Log interface {
	// Append commits records, in order, through the partition's Raft log
	// and returns once they are committed and applied to the
	// Coordinator's View. Errors should wrap a *kerr.Error
	// (kerr.NotLeaderForPartition when the leadership is lost).
	Append(ctx context.Context, records []Record) error
}

// Marker is a transaction marker to write.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool // COMMIT, else ABORT
	// TxnVersion is the transaction's version (WriteTxnMarkers v2's
	// TransactionVersion): at 2 the epoch is the one EndTxn bumped.
	TxnVersion int16
}

// Markers writes transaction markers into partitions, each through the
// partition's leader.
type Markers interface {
	// WriteMarkers writes m into every partition of parts and returns nil
	// once each has committed it; an error means some may not have (the
	// Coordinator retries them all: a marker written twice is harmless).
	// A partition that no longer exists counts as written.
	WriteMarkers(ctx context.Context, m Marker, parts []TopicPartition) error
}

// Defaults of Config's zero fields, Kafka's own unless said otherwise.
const (
	DefaultMaxTimeout    = 15 * time.Minute // transaction.max.timeout.ms
	DefaultCommitTimeout = 5 * time.Second
	// DefaultAbortInterval is how often the leader looks for timed-out
	// transactions (transaction.abort.timed.out.transaction.cleanup.interval.ms).
	DefaultAbortInterval = 10 * time.Second
	// DefaultMarkerRetry is the pause between two attempts at a
	// transaction's markers.
	DefaultMarkerRetry = 100 * time.Millisecond
	// DefaultCompletionWait is how long AddPartitionsToTxn waits for the
	// previous transaction's markers before it answers
	// CONCURRENT_TRANSACTIONS (ours; Kafka answers at once and clients
	// back off 20 ms or more, longer than the markers take here).
	DefaultCompletionWait = 500 * time.Millisecond
)

// Config tunes a Coordinator. Zero fields take their defaults, except
// the functions NewProducerID, TopicExists and OffsetsPartition, which
// are required.
type Config struct {
	// MaxTimeout bounds the transaction timeout InitProducerId may ask
	// for (transaction.max.timeout.ms); more is INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// CommitTimeout bounds one write of the coordinator's records.
	CommitTimeout time.Duration
	// AbortInterval is how often timed-out transactions are aborted.
	AbortInterval time.Duration
	// MarkerRetry is the pause between attempts at writing markers.
	MarkerRetry time.Duration
	// CompletionWait bounds AddPartitionsToTxn's wait for the markers of
	// its producer's previous transaction.
	CompletionWait time.Duration
	// NewProducerID allocates a producer id never handed out before.
	NewProducerID func(ctx context.Context) (int64, error)
	// TopicExists reports whether a partition exists.
	TopicExists func(topic string, partition int32) bool
	// OffsetsPartition is the partition of __consumer_offsets that holds
	// a group (AddOffsetsToTxn adds it to the transaction), creating that
	// topic if need be, as Kafka's FindCoordinator does; false while it
	// cannot be created.
	OffsetsPartition func(ctx context.Context, group string) (TopicPartition, bool)
	// Now is the leader's clock; default time.Now.
	Now func() time.Time
	// Logger; default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.NewProducerID == nil || c.TopicExists == nil || c.OffsetsPartition == nil {
		return c, errors.New("txncoord: Config needs NewProducerID, TopicExists and OffsetsPartition")
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = DefaultCommitTimeout
	}
	if c.AbortInterval <= 0 {
		c.AbortInterval = DefaultAbortInterval
	}
	if c.MarkerRetry <= 0 {
		c.MarkerRetry = DefaultMarkerRetry
	}
	if c.CompletionWait <= 0 {
		c.CompletionWait = DefaultCompletionWait
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
