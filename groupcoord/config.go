package groupcoord

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/minikafka/minikafka-go/internal/knob"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// Log is the __consumer_offsets partition a Coordinator writes to.
type Log interface {
	// Append commits records, in order, through the partition's Raft log
	// and returns once they are committed and applied to the Coordinator's
	// View, or with the error that prevented it. Records of two Appends
	// are committed in the order the calls were made when the first
	// returned before the second started. Errors should be, or wrap, a
	// *kerr.Error: kerr.NotLeaderForPartition when the replica lost its
	// leadership, kerr.RequestTimedOut when ctx expired; a client is
	// answered as Kafka converts them (NOT_COORDINATOR,
	// COORDINATOR_NOT_AVAILABLE). Append must be safe for concurrent use.
	Append(ctx context.Context, records []Record) error
}

// Defaults of Config's zero fields, Kafka's own unless said otherwise.
const (
	DefaultMinSessionTimeout     = 6 * time.Second                    // group.min.session.timeout.ms
	DefaultMaxSessionTimeout     = 30 * time.Minute                   // group.max.session.timeout.ms
	DefaultInitialRebalanceDelay = 3 * time.Second                    // group.initial.rebalance.delay.ms
	DefaultCommitTimeout         = 5 * time.Second                    // offsets.commit.timeout.ms
	DefaultMaxOffsetMetadata     = 4096                               // offset.metadata.max.bytes
	DefaultMaxRecordBytes        = topicconfig.DefaultMaxMessageBytes // message.max.bytes
	// DefaultMaxGroupSize bounds group.max.size, which Kafka leaves
	// unbounded: each member holds up to MaxRecordBytes of protocol
	// metadata while its group rebalances.
	DefaultMaxGroupSize = 1000
	// NewMemberJoinTimeout is how long a new member's JoinGroup may wait
	// for its first rebalance before the member is dropped (Kafka's
	// constant GroupCoordinator.NewMemberJoinTimeoutMs).
	NewMemberJoinTimeout = 5 * time.Minute

	// KIP-848 consumer groups (group.consumer.*).
	DefaultConsumerSessionTimeout       = 45 * time.Second // group.consumer.session.timeout.ms
	DefaultConsumerMinSessionTimeout    = 45 * time.Second // group.consumer.min.session.timeout.ms
	DefaultConsumerMaxSessionTimeout    = 60 * time.Second // group.consumer.max.session.timeout.ms
	DefaultConsumerHeartbeatInterval    = 5 * time.Second  // group.consumer.heartbeat.interval.ms
	DefaultConsumerMinHeartbeatInterval = 5 * time.Second  // group.consumer.min.heartbeat.interval.ms
	DefaultConsumerMaxHeartbeatInterval = 15 * time.Second // group.consumer.max.heartbeat.interval.ms
	// DefaultConsumerMaxSize bounds group.consumer.max.size, which Kafka
	// leaves unbounded, as DefaultMaxGroupSize does for classic groups.
	DefaultConsumerMaxSize = 1000
	// MigrationPolicy values (group.consumer.migration.policy).
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
)

// DefaultConsumerAssignors is group.consumer.assignors' default; the
// first is the default assignor of a group.
var DefaultConsumerAssignors = []string{AssignorUniform, AssignorRange}

// Config tunes a Coordinator. Zero fields take their defaults, except
// TopicExists, which is required.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// JoinGroup may ask for (group.min.session.timeout.ms,
	// group.max.session.timeout.ms); others get INVALID_SESSION_TIMEOUT.
	MinSessionTimeout, MaxSessionTimeout time.Duration

	// InitialRebalanceDelay is how long the first rebalance of an empty
	// group waits for more members, extended by another delay while new
	// members keep arriving, up to the rebalance timeout
	// (group.initial.rebalance.delay.ms). Default 3s; negative means no
	// delay.
	InitialRebalanceDelay time.Duration

	// MaxGroupSize bounds the members of a group, counting those that
	// were given a member id and have not joined with it yet
	// (group.max.size). Default 1000.
	MaxGroupSize int

	// MaxOffsetMetadata bounds the metadata string of a committed offset
	// (offset.metadata.max.bytes); longer ones get
	// OFFSET_METADATA_TOO_LARGE. Default 4096.
	MaxOffsetMetadata int

	// MaxRecordBytes bounds a record the coordinator writes (Kafka's
	// message.max.bytes, which bounds the same records in Kafka). A
	// JoinGroup whose protocols alone exceed it is refused with
	// INVALID_REQUEST; a generation whose group record would exceed it
	// fails its SyncGroup with UNKNOWN_SERVER_ERROR and rebalances, as
	// in Kafka. Default 1048588.
	MaxRecordBytes int

	// CommitTimeout bounds each Append (offsets.commit.timeout.ms).
	// Default 5s.
	CommitTimeout time.Duration

	// TopicExists reports whether a partition exists; commits and offset
	// deletions for partitions that do not are answered
	// UNKNOWN_TOPIC_OR_PARTITION. Required.
	TopicExists func(topic string, partition int32) bool

	// Consumer tunes the KIP-848 consumer groups (group.consumer.*).
	Consumer ConsumerConfig

	// Share tunes the KIP-932 share groups (group.share.*).
	Share ShareConfig

	// Topics is the cluster's topics for the consumer and share group
	// assignors and regex subscriptions. Nil: no topics (groups get empty
	// assignments).
	Topics TopicSource

	// Logger receives group lifecycle events at Info and Debug. Default
	// slog.Default().
	Logger *slog.Logger

	// Rand is the source of the random part of member ids. Default
	// crypto/rand.Reader.
	Rand io.Reader
}

// withDefaults validates c in one place and fills in the defaults.
func (c Config) withDefaults() (Config, error) {
	if c.TopicExists == nil {
		return c, &ConfigError{Field: "TopicExists", Reason: "nil"}
	}
	noDelay := c.InitialRebalanceDelay < 0
	if noDelay {
		c.InitialRebalanceDelay = 0
	}
	err := knob.Check([]knob.Duration{
		{Name: "MinSessionTimeout", V: &c.MinSessionTimeout, Def: DefaultMinSessionTimeout, Min: time.Millisecond},
		{Name: "MaxSessionTimeout", V: &c.MaxSessionTimeout, Def: DefaultMaxSessionTimeout, Min: time.Millisecond},
		{Name: "CommitTimeout", V: &c.CommitTimeout, Def: DefaultCommitTimeout, Min: time.Millisecond},
	}, []knob.Int{
		{Name: "MaxGroupSize", V: &c.MaxGroupSize, Def: DefaultMaxGroupSize, Min: 1, Max: math.MaxInt32},
		{Name: "MaxOffsetMetadata", V: &c.MaxOffsetMetadata, Def: DefaultMaxOffsetMetadata, Min: 1, Max: math.MaxInt32},
		{Name: "MaxRecordBytes", V: &c.MaxRecordBytes, Def: DefaultMaxRecordBytes, Min: 1024, Max: math.MaxInt32},
	})
	if ke, ok := errors.AsType[*knob.Error](err); ok {
		return c, &ConfigError{Field: ke.Name, Reason: ke.Msg}
	}
	if c.MaxSessionTimeout < c.MinSessionTimeout {
		return c, &ConfigError{Field: "MaxSessionTimeout", Reason: "below MinSessionTimeout"}
	}
	if !noDelay && c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	}
	if c.Consumer, err = c.Consumer.WithDefaults(); err != nil {
		return c, err
	}
	if c.Share, err = c.Share.WithDefaults(); err != nil {
		return c, err
	}
	if c.Topics == nil {
		c.Topics = TopicList(nil)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	return c, nil
}

// TopicInfo is a topic as consumer group assignors see it.
type TopicInfo struct {
	Name       string
	ID         TopicID
	Partitions int32
}

// TopicSource is the cluster's topics. Heartbeats, joins, commits and
// describes look up only the topics they name, by name or id, so that
// their cost does not grow with the cluster; only a regex subscription
// reads every topic (All).
type TopicSource interface {
	Topic(name string) (TopicInfo, bool)
	TopicByID(id TopicID) (TopicInfo, bool)
	All() []TopicInfo
}

// VersionedTopics is a TopicSource that tells when its topics may have
// changed: Version moves whenever a topic is created, deleted or grown
// (it may move more often). A regex's matches among All are kept until it
// moves.
type VersionedTopics interface {
	TopicSource
	Version() uint64
}

// TopicList is a TopicSource that lists every topic and searches the list
// for one (for tests and small clusters).
type TopicList func() []TopicInfo

func (l TopicList) All() []TopicInfo {
	if l == nil {
		return nil
	}
	return l()
}

func (l TopicList) Topic(name string) (TopicInfo, bool) {
	return l.find(func(t TopicInfo) bool { return t.Name == name })
}

func (l TopicList) TopicByID(id TopicID) (TopicInfo, bool) {
	return l.find(func(t TopicInfo) bool { return t.ID == id })
}

func (l TopicList) find(match func(TopicInfo) bool) (TopicInfo, bool) {
	for _, t := range l.All() {
		if match(t) {
			return t, true
		}
	}
	return TopicInfo{}, false
}

// ConsumerConfig tunes KIP-848 consumer groups; zero fields take Kafka's
// defaults.
type ConsumerConfig struct {
	// SessionTimeout is every member's session timeout
	// (group.consumer.session.timeout.ms), within MinSessionTimeout and
	// MaxSessionTimeout (group.consumer.min/max.session.timeout.ms).
	SessionTimeout, MinSessionTimeout, MaxSessionTimeout time.Duration

	// HeartbeatInterval is the interval given to members
	// (group.consumer.heartbeat.interval.ms), within its min and max
	// (group.consumer.min/max.heartbeat.interval.ms), and below the
	// session timeout.
	HeartbeatInterval, MinHeartbeatInterval, MaxHeartbeatInterval time.Duration

	// MaxSize bounds the members of a group (group.consumer.max.size).
	MaxSize int

	// Assignors are the server-side assignors members may name
	// (group.consumer.assignors: "uniform", "range"); the first is the
	// default.
	Assignors []string

	// MigrationPolicy is group.consumer.migration.policy. Empty groups
	// change protocol under every policy (Kafka's offline migration);
	// online migration is not served, so the policy is only validated.
	MigrationPolicy string
}

// WithDefaults validates c and fills in its defaults.
func (c ConsumerConfig) WithDefaults() (ConsumerConfig, error) {
	err := knob.Check([]knob.Duration{
		{Name: "SessionTimeout", V: &c.SessionTimeout, Def: DefaultConsumerSessionTimeout, Min: time.Millisecond},
		{Name: "MinSessionTimeout", V: &c.MinSessionTimeout, Def: DefaultConsumerMinSessionTimeout, Min: time.Millisecond},
		{Name: "MaxSessionTimeout", V: &c.MaxSessionTimeout, Def: DefaultConsumerMaxSessionTimeout, Min: time.Millisecond},
		{Name: "HeartbeatInterval", V: &c.HeartbeatInterval, Def: DefaultConsumerHeartbeatInterval, Min: time.Millisecond},
		{Name: "MinHeartbeatInterval", V: &c.MinHeartbeatInterval, Def: DefaultConsumerMinHeartbeatInterval, Min: time.Millisecond},
		{Name: "MaxHeartbeatInterval", V: &c.MaxHeartbeatInterval, Def: DefaultConsumerMaxHeartbeatInterval, Min: time.Millisecond},
	}, []knob.Int{
		{Name: "MaxSize", V: &c.MaxSize, Def: DefaultConsumerMaxSize, Min: 1, Max: math.MaxInt32},
	})
	if ke, ok := errors.AsType[*knob.Error](err); ok {
		return c, &ConfigError{Field: "Consumer." + ke.Name, Reason: ke.Msg}
	}
	switch {
	case c.SessionTimeout < c.MinSessionTimeout || c.SessionTimeout > c.MaxSessionTimeout:
		return c, &ConfigError{Field: "Consumer.SessionTimeout", Reason: "outside its min and max"}
	case c.HeartbeatInterval < c.MinHeartbeatInterval || c.HeartbeatInterval > c.MaxHeartbeatInterval:
		return c, &ConfigError{Field: "Consumer.HeartbeatInterval", Reason: "outside its min and max"}
	case c.HeartbeatInterval >= c.SessionTimeout:
		return c, &ConfigError{Field: "Consumer.HeartbeatInterval", Reason: "not below SessionTimeout"}
	}
	if len(c.Assignors) == 0 {
		c.Assignors = DefaultConsumerAssignors
	}
	for _, a := range c.Assignors {
		if a != AssignorUniform && a != AssignorRange {
			return c, &ConfigError{Field: "Consumer.Assignors", Reason: "unknown assignor " + a}
		}
	}
	switch c.MigrationPolicy {
	case "":
		c.MigrationPolicy = MigrationBidirectional
	case MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled:
	default:
		return c, &ConfigError{Field: "Consumer.MigrationPolicy", Reason: "unknown policy " + c.MigrationPolicy}
	}
	return c, nil
}
