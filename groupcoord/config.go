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
)

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
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	return c, nil
}
