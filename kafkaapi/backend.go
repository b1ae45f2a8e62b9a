package kafkaapi

import (
	"context"
	"time"
)

// Backend is everything the Kafka front end needs from the node. The server
// calls it from many connection goroutines at once, so every method must be
// safe for concurrent use.
//
// Errors returned by Backend and Partition methods should be, or wrap
// (errors.As), a *kerr.Error; its code goes on the wire. Other errors are
// answered as described at ErrorCode.
type Backend interface {
	// Cluster returns this node's current view of the cluster for a
	// Metadata request. It must not block for long (it should read local
	// state). The server answers topics in the order of View.Topics when a
	// client asks for all topics, so the backend should list them in a
	// stable order (e.g. sorted by name).
	Cluster(ctx context.Context) ClusterView

	// CreateTopic creates a topic or, with validateOnly, only reports
	// whether it could be created. The server has already checked the name
	// with ValidateTopicName, that Partitions and ReplicationFactor are
	// positive or -1 (-1 means the node's default), that the request's
	// topics stay within Config.MaxCreatePartitions, and that
	// ReplicationFactor is at most the brokers Cluster lists. It returns
	// the topic as created, with defaults resolved. Expected errors:
	// kerr.TopicAlreadyExists, kerr.InvalidPartitions,
	// kerr.InvalidReplicationFactor (for example more replicas than live
	// brokers), kerr.NotController, kerr.RequestTimedOut; ctx carries the
	// request's deadline.
	CreateTopic(ctx context.Context, spec TopicSpec, validateOnly bool) (CreatedTopic, error)

	// CreatePartitions grows a topic to count partitions or, with
	// validateOnly, only reports whether it could. Expected errors:
	// kerr.UnknownTopicOrPartition, kerr.InvalidPartitions (count not above
	// the current one), kerr.InvalidReplicationFactor (fewer live brokers
	// than the topic's replicas), kerr.PolicyViolation, kerr.InvalidRequest
	// (a topic whose partitions cannot change); ctx carries the deadline.
	CreatePartitions(ctx context.Context, topic string, count int32, validateOnly bool) error

	// DeleteTopic deletes a topic and its data on every replica. Expected
	// errors: kerr.UnknownTopicOrPartition, kerr.InvalidTopicException (an
	// internal topic), kerr.NotController, kerr.RequestTimedOut.
	DeleteTopic(ctx context.Context, topic string) error

	// TopicConfigs returns a topic's config overrides (nil when it has
	// none), under topic config names. It reads local state and must not
	// block. Errors: kerr.UnknownTopicOrPartition.
	TopicConfigs(topic string) (map[string]string, error)

	// ClusterConfigs returns the cluster-wide dynamic broker defaults
	// (Kafka's BROKER resource with an empty name), under broker config
	// names such as log.retention.ms; nil when none is set. It reads
	// local state and must not block.
	ClusterConfigs() map[string]string

	// AlterTopicConfigs replaces a topic's overrides with configs, whole,
	// or with validateOnly only reports whether it could. The server has
	// validated configs with topicconfig.ValidateAll. Expected errors:
	// kerr.UnknownTopicOrPartition, kerr.InvalidConfig,
	// kerr.NotController, kerr.RequestTimedOut; ctx carries the deadline.
	AlterTopicConfigs(ctx context.Context, topic string, configs map[string]string, validateOnly bool) error

	// AlterClusterConfigs replaces the cluster-wide dynamic broker
	// defaults, whole, or with validateOnly only reports whether it could.
	// The server has validated configs with topicconfig.ValidateBrokerAll.
	// Expected errors as AlterTopicConfigs, without the unknown topic.
	AlterClusterConfigs(ctx context.Context, configs map[string]string, validateOnly bool) error

	// AutoCreateTopics reports whether a Metadata request that names an
	// unknown topic, and allows it, should create it with the defaults.
	AutoCreateTopics() bool

	// Partition returns the local replica of a partition. It must not
	// block. Errors: kerr.UnknownTopicOrPartition if the partition does not
	// exist, kerr.NotLeaderForPartition if this node holds no replica of it.
	// A returned replica that is not the leader is answered
	// NOT_LEADER_OR_FOLLOWER by the server (see Partition.IsLeader).
	Partition(topic string, partition int32) (Partition, error)

	// Configs returns this node's settings for DescribeConfigs: under
	// Kafka's broker config names where Kafka has the setting (broker.id,
	// which must be present, num.partitions, log.segment.bytes, ...), and
	// for the node's own settings under names starting with "minikafka.".
	// They are static (fixed when the node started) and listed in a stable
	// order. A topic config whose broker synonym is listed (for example
	// segment.bytes for log.segment.bytes) takes the node's value.
	Configs() []ConfigEntry

	// InitProducerID allocates a producer id (idempotent producer) or, for
	// a transactional id, returns that id's producer id with its epoch
	// bumped, which fences the previous holder (docs/contract.md B5). Ids are never
	// reused. ctx carries the server's request timeout.
	InitProducerID(ctx context.Context, req InitProducerIDRequest) (ProducerIdentity, error)

	// Groups serves consumer groups (groups.go).
	Groups
}

// Partition is the local replica of one partition, as the front end uses
// it. All methods must be safe for concurrent use and, except for the
// function Produce returns, must not block for long.
type Partition interface {
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

	// OffsetForTimestamp finds the first committed batch whose max
	// timestamp is at or after ts and returns its offset, timestamp and
	// leader epoch; ok is false if there is none.
	OffsetForTimestamp(ts int64) (found TimestampOffset, ok bool)

	// IsLeader reports whether this replica is the partition's leader.
	IsLeader() bool

	// LeaderEpoch is the current leader epoch: the Raft term of the
	// partition's group.
	LeaderEpoch() int32
}

// FetchCounter is an optional Partition capability: Fetch passes it the
// whole batches it returns to a consumer from the partition.
type FetchCounter interface {
	Fetched(batches []byte)
}

// MaxTimestampReader is an optional Partition capability: a Partition that
// implements it answers ListOffsets with timestamp -3 (KIP-734, the record
// with the largest timestamp). Without it such requests get offset -1.
type MaxTimestampReader interface {
	// MaxTimestamp returns the offset and timestamp of the committed
	// record with the largest timestamp; ok is false for an empty log.
	MaxTimestamp() (found TimestampOffset, ok bool)
}

// Settler is an optional Partition capability for replicas whose log and
// high watermark lag behind the replicated log for a moment after they
// become leader (a Raft leader applies the entries of earlier terms only
// once an entry of its own term commits). Without it the server takes the
// partition's state as current.
type Settler interface {
	// Settle returns once the leader has applied every entry of the terms
	// before its current one, or with the error to answer (for example
	// kerr.NotLeaderForPartition). It is cheap once settled.
	Settle(ctx context.Context) error
}

// settle calls p's Settle, if it has one.
func settle(ctx context.Context, p Partition) error {
	if s, ok := p.(Settler); ok {
		return s.Settle(ctx)
	}
	return nil
}

// EpochEndOffsetReader is an optional Partition capability: an index of
// the leader epochs stamped into the stored batches, from which the server
// answers OffsetForLeaderEpoch. Without it the server finds the same
// answer by a binary search over the batch headers with Read, which costs
// O(log n) reads of one batch each.
type EpochEndOffsetReader interface {
	// EpochEndOffset returns the largest leader epoch at or below epoch
	// that a stored batch carries (-1 if none does) and the base offset of
	// the first batch whose epoch is larger (the log end offset if none
	// is). Epochs never decrease along the log.
	EpochEndOffset(epoch int32) (floor int32, end int64, err error)
}

// TxnReader is an optional Partition capability: the partition side of
// Kafka transactions, for read_committed consumers. Without it the last
// stable offset is the high watermark and no transaction is aborted.
type TxnReader interface {
	// LastStableOffset is the offset below which every transaction on the
	// partition has ended (committed or aborted): the first offset of the
	// oldest open transaction, or the high watermark when none is open. It
	// is never above the high watermark read after it.
	LastStableOffset() int64
	// AbortedTxns returns the aborted transactions whose offsets overlap
	// [from, to), ordered by their ABORT markers' offsets. It covers every
	// abort below a LastStableOffset read before the call.
	AbortedTxns(from, to int64) []AbortedTxn
}

// AbortedTxn is an aborted transaction as a Fetch reports it: producer
// ProducerID's transactional records from FirstOffset up to its ABORT
// marker are to be skipped by read_committed consumers.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// TxnMarkerWriter is an optional Partition capability: writing a
// transaction marker for the transaction coordinator (WriteTxnMarkers).
// Without it WriteTxnMarkers answers the partition
// UNSUPPORTED_FOR_MESSAGE_FORMAT, as Kafka does for a log that cannot hold
// markers.
type TxnMarkerWriter interface {
	// WriteTxnMarker starts writing m through the partition's replicated
	// log, like Produce (in call order, returning at once). The wait
	// reports the marker's offset as BaseOffset, or an error:
	// kerr.InvalidProducerEpoch (an epoch older than the producer's),
	// kerr.TransactionCoordinatorFenced, kerr.NotLeaderForPartition,
	// kerr.RequestTimedOut, kerr.KafkaStorageError.
	WriteTxnMarker(m TxnMarker) ProduceWait
}

// TxnMarker is one COMMIT or ABORT marker for one partition.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool // COMMIT, else ABORT
	CoordinatorEpoch int32
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

// ClusterView is a snapshot of the cluster for a Metadata answer.
type ClusterView struct {
	ClusterID    string // "" is answered as null
	ControllerID int32  // -1 if unknown
	Brokers      []Broker
	Topics       []TopicView
}

// Broker is one live node's Kafka listener.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string // "" is answered as null
	// Endpoints are the broker's advertised listeners by name; a
	// connection through a named Listener sees the endpoint of that name
	// in Host and Port.
	Endpoints []Endpoint
}

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Listener string
	Host     string
	Port     int32
}

// TopicView is one topic in a ClusterView.
type TopicView struct {
	Name       string
	ID         [16]byte // all zero if the topic has no id
	Internal   bool
	Partitions []PartitionView
}

// PartitionView is one partition in a TopicView.
type PartitionView struct {
	Partition       int32
	Leader          int32 // node id, -1 if no leader (answered LEADER_NOT_AVAILABLE)
	LeaderEpoch     int32
	Replicas        []int32
	ISR             []int32
	OfflineReplicas []int32
}

// TopicSpec asks for a topic. -1 means the node's default.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	// Configs are the topic's overrides, checked with
	// topicconfig.ValidateAll; nil when none.
	Configs map[string]string
}

// CreatedTopic is a topic as CreateTopic made (or would make) it.
type CreatedTopic struct {
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string // the overrides; filled in by the server
}

// InitProducerIDRequest asks for a producer identity.
type InitProducerIDRequest struct {
	// TransactionalID is nil for an idempotent producer; never "" (the
	// server answers that INVALID_REQUEST itself).
	TransactionalID    *string
	TransactionTimeout time.Duration
	// ProducerID and ProducerEpoch are -1, or (InitProducerId v3+, KIP-360)
	// the identity the client has now and wants bumped.
	ProducerID    int64
	ProducerEpoch int16
}

// ProducerIdentity is a producer id and epoch.
type ProducerIdentity struct {
	ID    int64
	Epoch int16
}
