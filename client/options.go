package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/minikafka/minikafka-go/record"
)

// Opt configures a Producer, Consumer, GroupConsumer or Admin. Options
// made by the functions in this file apply to all of them; those
// documented as producer, consumer or group options are rejected (with a
// ConfigError) by the other constructors. Consumer options apply to the
// GroupConsumer too, except ConsumePartitions.
type Opt interface {
	apply(*config)
	name() string
	kind() optKind
}

type optKind uint8

const (
	anyOpt optKind = iota
	producerOpt
	consumerOpt
	groupOpt // group consumer (NewGroupConsumer)
	shareOpt // share consumer (NewShareConsumer)
)

// accepts reports whether a client of kind k takes an option of kind o: a
// group consumer is a consumer too.
func (k optKind) accepts(o optKind) bool {
	return o == anyOpt || o == k || ((k == groupOpt || k == shareOpt) && o == consumerOpt)
}

func (k optKind) String() string {
	switch k {
	case producerOpt:
		return "a producer"
	case consumerOpt:
		return "a consumer"
	case groupOpt:
		return "a group consumer"
	case shareOpt:
		return "a share consumer"
	}
	return "a client"
}

type opt struct {
	n  string
	k  optKind
	fn func(*config)
}

func (o opt) apply(c *config) { o.fn(c) }
func (o opt) name() string    { return o.n }
func (o opt) kind() optKind   { return o.k }
func mk(n string, k optKind, fn func(*config)) Opt {
	return opt{n: n, k: k, fn: fn}
}

// Acks is how many replicas must have a batch before the broker answers a
// produce request.
type Acks int16

const (
	// NoAck: the broker sends no response; results carry offset -1.
	NoAck Acks = 0
	// LeaderAck: the leader answers once it has the batch.
	LeaderAck Acks = 1
	// AllAcks: the leader answers once every in-sync replica has the batch.
	AllAcks Acks = -1
)

func (a Acks) String() string {
	switch a {
	case NoAck:
		return "0"
	case LeaderAck:
		return "1"
	case AllAcks:
		return "all"
	}
	return fmt.Sprintf("acks(%d)", int16(a))
}

// Codec is a batch compression codec.
type Codec int8

// The codecs Kafka defines.
const (
	NoCompression     Codec = record.CompressionNone
	GzipCompression   Codec = record.CompressionGzip
	SnappyCompression Codec = record.CompressionSnappy
	LZ4Compression    Codec = record.CompressionLZ4
	ZstdCompression   Codec = record.CompressionZstd
)

// DialFunc opens a connection to a broker.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// config is every option, validated in one place (validate).
type config struct {
	explicit map[string]bool // options the caller gave, by name

	// all clients
	brokers         []string
	clientID        string
	dialer          DialFunc
	dialTimeout     time.Duration
	requestTimeout  time.Duration
	retryBackoff    time.Duration
	retryBackoffMax time.Duration
	metadataMaxAge  time.Duration
	logger          *slog.Logger
	tls             *tls.Config // nil: plaintext unless tlsCAFile
	tlsCAFile       string
	saslMechanism   string
	saslUser        string
	saslPassword    string
	sasl            sasl.Mechanism // built by validateSecurity; nil: none

	// producer
	batchSize       int
	maxBatchBytes   int
	linger          time.Duration
	bufferLimit     int
	blockOnFull     bool
	acks            Acks
	idempotent      bool
	txnName         string
	txnID           string
	txnTimeout      time.Duration
	compression     Codec
	deliveryTimeout time.Duration
	maxInFlight     int
	partitioner     Partitioner

	// consumer
	consumeTopics     []string
	consumePartitions map[string]map[int32]Offset
	resetOffset       Offset
	fetchMaxWait      time.Duration
	fetchMaxBytes     int32
	fetchPartBytes    int32
	isolation         Isolation

	// group consumer
	group            string
	instanceID       string
	strategies       []AssignStrategy
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	heartbeat        time.Duration
	autoCommit       bool
	autoCommitEvery  time.Duration
	onAssigned       PartitionsCallback
	onRevoked        PartitionsCallback
	onLost           PartitionsCallback
	groupProtocol    RebalanceProtocol
	remoteAssignor   string // KIP-848 server assignor; "" lets the broker choose

	share shareConfig // share consumer (share_options.go)
}

func defaultConfig() *config {
	var d net.Dialer
	return &config{
		explicit:        map[string]bool{},
		clientID:        "minikafka-go",
		dialer:          d.DialContext,
		dialTimeout:     10 * time.Second,
		requestTimeout:  30 * time.Second,
		retryBackoff:    100 * time.Millisecond,
		retryBackoffMax: time.Second,
		metadataMaxAge:  5 * time.Minute,
		logger:          slog.New(slog.DiscardHandler),

		batchSize:       1 << 20,
		maxBatchBytes:   1 << 20,
		linger:          5 * time.Millisecond,
		bufferLimit:     32 << 20,
		acks:            AllAcks,
		idempotent:      true,
		compression:     NoCompression,
		deliveryTimeout: 2 * time.Minute,
		maxInFlight:     5,
		txnTimeout:      time.Minute,
		partitioner:     CRC32Partitioner(),

		resetOffset:    AtStart(),
		fetchMaxWait:   500 * time.Millisecond,
		fetchMaxBytes:  50 << 20,
		fetchPartBytes: 1 << 20,

		strategies:       []AssignStrategy{RangeAssign, CooperativeStickyAssign},
		sessionTimeout:   45 * time.Second,
		rebalanceTimeout: 5 * time.Minute,
		heartbeat:        3 * time.Second,
		autoCommit:       true,
		autoCommitEvery:  5 * time.Second,
		groupProtocol:    GroupProtocolClassic,
	}
}

// newConfig applies opts for a client of the given kind and validates.
func newConfig(k optKind, opts []Opt) (*config, error) {
	c := defaultConfig()
	for _, o := range opts {
		if !k.accepts(o.kind()) {
			return nil, &ConfigError{Option: o.name(), Err: fmt.Errorf("is %s option", o.kind())}
		}
		o.apply(c)
		c.explicit[o.name()] = true
	}
	return c, c.validate(k)
}

func (c *config) validate(k optKind) error {
	bad := func(name, format string, args ...any) error {
		return &ConfigError{Option: name, Err: fmt.Errorf(format, args...)}
	}
	if len(c.brokers) == 0 {
		return bad("Brokers", "at least one seed broker is needed")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"DialTimeout", c.dialTimeout}, {"RequestTimeout", c.requestTimeout}, {"RetryBackoff", c.retryBackoff}} {
		if d.v <= 0 {
			return bad(d.name, "must be positive, got %v", d.v)
		}
	}
	if c.retryBackoffMax < c.retryBackoff {
		return bad("RetryBackoff", "max %v below base %v", c.retryBackoffMax, c.retryBackoff)
	}
	if c.dialer == nil {
		return bad("Dialer", "nil dial function")
	}
	if c.logger == nil {
		return bad("Logger", "nil logger")
	}
	if err := c.validateSecurity(); err != nil {
		return err
	}
	if k == groupOpt {
		if err := c.validateGroup(); err != nil {
			return err
		}
	}
	if k == shareOpt {
		if err := c.validateShare(); err != nil {
			return err
		}
	}
	if k != producerOpt {
		if k != anyOpt && c.fetchMaxWait < 0 {
			return bad("FetchMaxWait", "negative")
		}
		if c.isolation != ReadUncommitted && c.isolation != ReadCommitted {
			return bad("IsolationLevel", "must be ReadUncommitted or ReadCommitted, got %d", c.isolation)
		}
		return nil
	}
	if c.maxBatchBytes < c.batchSize && !c.explicit["MaxBatchBytes"] {
		c.maxBatchBytes = c.batchSize
	}
	switch {
	case c.batchSize <= 0:
		return bad("BatchSize", "must be positive, got %d", c.batchSize)
	case c.maxBatchBytes < c.batchSize:
		return bad("MaxBatchBytes", "must be at least BatchSize (%d), got %d", c.batchSize, c.maxBatchBytes)
	case c.linger < 0:
		return bad("Linger", "negative")
	case c.bufferLimit <= 0:
		return bad("BufferLimit", "must be positive, got %d", c.bufferLimit)
	case c.acks != NoAck && c.acks != LeaderAck && c.acks != AllAcks:
		return bad("RequiredAcks", "must be NoAck, LeaderAck or AllAcks, got %d", int16(c.acks))
	case c.compression < NoCompression || c.compression > ZstdCompression:
		return bad("Compression", "unknown codec %d", c.compression)
	case c.deliveryTimeout <= 0:
		return bad("DeliveryTimeout", "must be positive")
	case c.maxInFlight < 1 || c.maxInFlight > 5:
		return bad("MaxInFlight", "must be 1..5 (the broker deduplicates the last 5 batches), got %d", c.maxInFlight)
	case c.partitioner == nil:
		return bad("WithPartitioner", "nil partitioner")
	}
	if c.deliveryTimeout < c.linger+c.requestTimeout {
		// As Kafka's producer: a batch may wait Linger, then a request
		// may take RequestTimeout; a shorter delivery timeout would fail
		// records that never had a chance.
		return bad("DeliveryTimeout", "%v is below Linger + RequestTimeout (%v)", c.deliveryTimeout, c.linger+c.requestTimeout)
	}
	return c.validateIdentity()
}

// validateIdentity checks a producer's idempotence and transactional
// options.
func (c *config) validateIdentity() error {
	bad := func(name, format string, args ...any) error {
		return &ConfigError{Option: name, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case c.txnName != "" && !c.idempotent:
		return bad("TransactionalName", "needs idempotence")
	case c.txnID != "" && (!c.idempotent || c.txnName != ""):
		return bad("TransactionalID", "needs idempotence, and excludes TransactionalName")
	case c.txnTimeout <= 0 || c.txnTimeout > time.Duration(1<<31-1)*time.Millisecond:
		return bad("TransactionTimeout", "must be positive and fit in int32 milliseconds, got %v", c.txnTimeout)
	case c.idempotent && c.acks != AllAcks:
		// P8: only an explicit conflict is an error; with idempotence
		// explicitly off, any acks goes.
		return &ConfigError{Option: "RequiredAcks", Err: ErrIdempotenceNeedsAcksAll}
	}
	return nil
}

// validateGroup checks the options of a group consumer.
func (c *config) validateGroup() error {
	bad := func(name, format string, args ...any) error {
		return &ConfigError{Option: name, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case c.group == "":
		return bad("ConsumerGroup", "a group consumer needs a group name")
	case len(c.consumeTopics) == 0:
		return bad("ConsumeTopics", "a group consumer needs at least one topic to subscribe to")
	case c.consumePartitions != nil:
		return bad("ConsumePartitions", "a group consumer's partitions come from the group")
	case c.resetOffset.kind == offsetAt:
		return bad("ConsumeResetOffset", "a group consumer resets to AtStart or AtEnd, not an exact offset")
	case len(c.strategies) == 0:
		return bad("GroupStrategies", "at least one strategy is needed")
	case c.sessionTimeout <= 0 || c.rebalanceTimeout <= 0 || c.heartbeat <= 0:
		return bad("SessionTimeout", "session timeout, rebalance timeout and heartbeat interval must be positive")
	case c.heartbeat >= c.sessionTimeout:
		return bad("HeartbeatInterval", "%v must be below the session timeout (%v)", c.heartbeat, c.sessionTimeout)
	case c.autoCommit && c.autoCommitEvery <= 0:
		return bad("AutoCommitInterval", "must be positive, got %v", c.autoCommitEvery)
	}
	if err := c.validateGroupProtocol(); err != nil {
		return err
	}
	seen := map[AssignStrategy]bool{}
	for _, s := range c.strategies {
		if s != RangeAssign && s != CooperativeStickyAssign {
			return bad("GroupStrategies", "unknown strategy %d", s)
		}
		if seen[s] {
			return bad("GroupStrategies", "%v given twice", s)
		}
		seen[s] = true
	}
	return nil
}

// ---- options for every client ----

// Brokers sets the seed brokers, as host:port. Required; no default.
func Brokers(addrs ...string) Opt {
	addrs = append([]string(nil), addrs...)
	return mk("Brokers", anyOpt, func(c *config) { c.brokers = addrs })
}

// ClientID sets the client id sent with every request. Default
// "minikafka-go".
func ClientID(id string) Opt { return mk("ClientID", anyOpt, func(c *config) { c.clientID = id }) }

// Dialer sets how connections are opened, for TLS, proxies or tests.
// Default: a net.Dialer.
func Dialer(fn DialFunc) Opt { return mk("Dialer", anyOpt, func(c *config) { c.dialer = fn }) }

// DialTimeout bounds opening a connection. Default 10s.
func DialTimeout(d time.Duration) Opt {
	return mk("DialTimeout", anyOpt, func(c *config) { c.dialTimeout = d })
}

// RequestTimeout bounds the wait for any response; a request without an
// answer by then has an unknown outcome and its connection is closed. It
// is also the broker-side timeout of produce requests. Default 30s.
func RequestTimeout(d time.Duration) Opt {
	return mk("RequestTimeout", anyOpt, func(c *config) { c.requestTimeout = d })
}

// RetryBackoff sets the wait before a retry: base, doubling per attempt up
// to max, each with ±20% jitter. Default 100ms up to 1s.
func RetryBackoff(base, max time.Duration) Opt {
	return mk("RetryBackoff", anyOpt, func(c *config) { c.retryBackoff, c.retryBackoffMax = base, max })
}

// MetadataMaxAge is how often metadata is refreshed when nothing asks for
// it sooner. Default 5m.
func MetadataMaxAge(d time.Duration) Opt {
	return mk("MetadataMaxAge", anyOpt, func(c *config) { c.metadataMaxAge = d })
}

// Logger sets the log/slog logger. Default: discard everything.
func Logger(l *slog.Logger) Opt { return mk("Logger", anyOpt, func(c *config) { c.logger = l }) }

// ---- consumer options ----

// ConsumeTopics assigns every partition of the topics, each starting at
// ConsumeResetOffset. For a GroupConsumer, these are the topics the member
// subscribes to: the group assigns their partitions. Consumer option.
func ConsumeTopics(topics ...string) Opt {
	topics = append([]string(nil), topics...)
	return mk("ConsumeTopics", consumerOpt, func(c *config) { c.consumeTopics = append(c.consumeTopics, topics...) })
}

// ConsumePartitions assigns the given partitions, each starting at its own
// offset. Consumer option.
func ConsumePartitions(parts map[string]map[int32]Offset) Opt {
	return mk("ConsumePartitions", consumerOpt, func(c *config) {
		if c.consumePartitions == nil {
			c.consumePartitions = map[string]map[int32]Offset{}
		}
		for t, ps := range parts {
			if c.consumePartitions[t] == nil {
				c.consumePartitions[t] = map[int32]Offset{}
			}
			for p, o := range ps {
				c.consumePartitions[t][p] = o
			}
		}
	})
}

// ConsumeResetOffset is where partitions from ConsumeTopics start, and
// where a partition restarts when its offset is out of range. For a
// GroupConsumer it is where a partition without a committed offset starts
// (Kafka's auto.offset.reset, AtStart or AtEnd). Default AtStart (the Java
// client's default is latest, AtEnd). Consumer option.
func ConsumeResetOffset(o Offset) Opt {
	return mk("ConsumeResetOffset", consumerOpt, func(c *config) { c.resetOffset = o })
}

// FetchMaxWait is how long a broker may hold a fetch waiting for data.
// Default 500ms. Consumer option.
func FetchMaxWait(d time.Duration) Opt {
	return mk("FetchMaxWait", consumerOpt, func(c *config) { c.fetchMaxWait = d })
}

// FetchMaxBytes bounds one fetch response (total) and each partition in it
// (perPartition). Defaults 50 MiB and 1 MiB. Consumer option.
func FetchMaxBytes(total, perPartition int32) Opt {
	return mk("FetchMaxBytes", consumerOpt, func(c *config) { c.fetchMaxBytes, c.fetchPartBytes = total, perPartition })
}

// Isolation is which records a consumer reads (Kafka's isolation.level).
type Isolation int8

const (
	// ReadUncommitted reads every record, including those of open and
	// aborted transactions (Kafka's default).
	ReadUncommitted Isolation = 0
	// ReadCommitted reads up to the last stable offset only, and drops
	// the records of aborted transactions.
	ReadCommitted Isolation = 1
)

// IsolationLevel sets which records the consumer reads. Default
// ReadUncommitted. Control batches (transaction markers) are never
// returned. Consumer option.
func IsolationLevel(l Isolation) Opt {
	return mk("IsolationLevel", consumerOpt, func(c *config) { c.isolation = l })
}
