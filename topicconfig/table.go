package topicconfig

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Spec is one of Kafka's topic configs.
type Spec struct {
	Name    string
	Type    kmsg.ConfigType
	Default string // Kafka's default
	// Broker is the broker config that supplies the default (Kafka's
	// ServerTopicConfigSynonyms), "" if none.
	Broker string
	Doc    string

	// units are Broker's coarser time synonyms, finest first, each with
	// its factor to milliseconds (log.retention.minutes, ...).
	units []unit
	valid validator
}

// unit is a broker time synonym in a coarser unit than milliseconds.
type unit struct {
	name   string
	factor int64
}

const maxLong = "9223372036854775807"

// Kafka's limits where the node follows them as they are.
const (
	// MinSegmentBytes is Kafka 4.0's minimum segment.bytes (KIP-1030;
	// before it, 14): every segment keeps a file open, so a client must
	// not be able to ask for one file per batch.
	MinSegmentBytes = 1 << 20
	// DefaultMaxMessageBytes is Kafka's message.max.bytes default: a
	// megabyte plus the record batch overhead.
	DefaultMaxMessageBytes = 1048588
)

// specs are Kafka's topic configs (as of Kafka 3.9, without the ones
// Kafka 4 removed), sorted by name.
var specs = []Spec{
	{Name: "cleanup.policy", Type: kmsg.ConfigTypeList, Default: "delete", Broker: "log.cleanup.policy",
		Doc:   "What happens to old log segments: delete, or compact (accepted and stored, but the node acts only on delete; compaction is not implemented).",
		valid: listOf("delete", "compact")},
	{Name: "compression.gzip.level", Type: kmsg.ConfigTypeInt, Default: "-1", Broker: "compression.gzip.level",
		Doc: "The gzip level when compression.type is gzip.", valid: level(1, 9)},
	{Name: "compression.lz4.level", Type: kmsg.ConfigTypeInt, Default: "9", Broker: "compression.lz4.level",
		Doc: "The lz4 level when compression.type is lz4.", valid: intBetween(1, 17)},
	{Name: "compression.type", Type: kmsg.ConfigTypeString, Default: "producer", Broker: "compression.type",
		Doc:   "The compression of stored batches; producer keeps what the producer sent (the only behaviour the node has).",
		valid: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")},
	{Name: "compression.zstd.level", Type: kmsg.ConfigTypeInt, Default: "3", Broker: "compression.zstd.level",
		Doc: "The zstd level when compression.type is zstd.", valid: intBetween(-131072, 22)},
	{Name: "delete.retention.ms", Type: kmsg.ConfigTypeLong, Default: "86400000", Broker: "log.cleaner.delete.retention.ms",
		Doc: "How long delete tombstones are kept in compacted topics.", valid: longAtLeast(0)},
	{Name: "file.delete.delay.ms", Type: kmsg.ConfigTypeLong, Default: "60000", Broker: "log.segment.delete.delay.ms",
		Doc: "The wait before deleting a file from the file system.", valid: longAtLeast(0)},
	{Name: "flush.messages", Type: kmsg.ConfigTypeLong, Default: maxLong, Broker: "log.flush.interval.messages",
		Doc: "Messages written between forced fsyncs of the log.", valid: longAtLeast(1)},
	{Name: "flush.ms", Type: kmsg.ConfigTypeLong, Default: maxLong, Broker: "log.flush.interval.ms",
		Doc: "With write.caching=true, the longest an acknowledged write waits before it is fsynced (0: fsync before acknowledging). " +
			"Kafka's default (Long.MAX, never force) gives 100 ms there, and the node's static default is 100. " +
			"Without write caching every write is fsynced before it is acknowledged, which meets any flush.ms.",
		valid: longAtLeast(0)},
	{Name: "follower.replication.throttled.replicas", Type: kmsg.ConfigTypeList, Default: "",
		Doc: "Replicas whose follower replication is throttled.", valid: throttledReplicas},
	{Name: "index.interval.bytes", Type: kmsg.ConfigTypeInt, Default: "4096", Broker: "log.index.interval.bytes",
		Doc: "Log bytes between offset index entries.", valid: intAtLeast(0)},
	{Name: "leader.replication.throttled.replicas", Type: kmsg.ConfigTypeList, Default: "",
		Doc: "Replicas whose leader replication is throttled.", valid: throttledReplicas},
	{Name: "local.retention.bytes", Type: kmsg.ConfigTypeLong, Default: "-2", Broker: "log.local.retention.bytes",
		Doc: "Local bytes kept before tiered storage takes over; -2 follows retention.bytes.", valid: longAtLeast(-2)},
	{Name: "local.retention.ms", Type: kmsg.ConfigTypeLong, Default: "-2", Broker: "log.local.retention.ms",
		Doc: "Local time kept before tiered storage takes over; -2 follows retention.ms.", valid: longAtLeast(-2)},
	{Name: "max.compaction.lag.ms", Type: kmsg.ConfigTypeLong, Default: maxLong, Broker: "log.cleaner.max.compaction.lag.ms",
		Doc: "The longest a message stays ineligible for compaction.", valid: longAtLeast(1)},
	{Name: "max.message.bytes", Type: kmsg.ConfigTypeInt, Default: strconv.Itoa(DefaultMaxMessageBytes), Broker: "message.max.bytes",
		Doc: "The largest record batch size allowed.", valid: intAtLeast(0)},
	{Name: "message.timestamp.after.max.ms", Type: kmsg.ConfigTypeLong, Default: maxLong, Broker: "log.message.timestamp.after.max.ms",
		Doc: "How far a message timestamp may be ahead of the broker's clock.", valid: longAtLeast(0)},
	{Name: "message.timestamp.before.max.ms", Type: kmsg.ConfigTypeLong, Default: maxLong, Broker: "log.message.timestamp.before.max.ms",
		Doc: "How far a message timestamp may be behind the broker's clock.", valid: longAtLeast(0)},
	{Name: "message.timestamp.type", Type: kmsg.ConfigTypeString, Default: "CreateTime", Broker: "log.message.timestamp.type",
		Doc:   "Whether message timestamps are the producer's (CreateTime) or the broker's (LogAppendTime).",
		valid: oneOf("CreateTime", "LogAppendTime")},
	{Name: "min.cleanable.dirty.ratio", Type: kmsg.ConfigTypeDouble, Default: "0.5", Broker: "log.cleaner.min.cleanable.ratio",
		Doc: "The dirty share of the log above which it is compacted.", valid: ratio},
	{Name: "min.compaction.lag.ms", Type: kmsg.ConfigTypeLong, Default: "0", Broker: "log.cleaner.min.compaction.lag.ms",
		Doc: "The shortest a message stays uncompacted.", valid: longAtLeast(0)},
	{Name: "min.insync.replicas", Type: kmsg.ConfigTypeInt, Default: "1", Broker: "min.insync.replicas",
		Doc: "Replicas that must acknowledge a write with acks=all (a Raft majority always does on this node).", valid: intAtLeast(1)},
	{Name: "preallocate", Type: kmsg.ConfigTypeBoolean, Default: "false", Broker: "log.preallocate",
		Doc: "Whether segment files are preallocated.", valid: boolean},
	{Name: "remote.storage.enable", Type: kmsg.ConfigTypeBoolean, Default: "false",
		Doc:   "Whether the topic uses tiered storage; the node has none, so only false is accepted.",
		valid: falseOnly("Tiered Storage functionality is disabled in the broker")},
	{Name: "retention.bytes", Type: kmsg.ConfigTypeLong, Default: "-1", Broker: "log.retention.bytes",
		Doc: "The partition size above which old segments are deleted; -1 is no limit.", valid: longAtLeast(-1)},
	{Name: "retention.ms", Type: kmsg.ConfigTypeLong, Default: "604800000", Broker: "log.retention.ms",
		Doc: "How long data is kept; -1 is forever.", valid: longAtLeast(-1),
		units: []unit{{"log.retention.minutes", 60_000}, {"log.retention.hours", 3_600_000}}},
	{Name: "segment.bytes", Type: kmsg.ConfigTypeInt, Default: "1073741824", Broker: "log.segment.bytes",
		Doc: "The size of a log segment file.", valid: intAtLeast(MinSegmentBytes)},
	{Name: "segment.index.bytes", Type: kmsg.ConfigTypeInt, Default: "10485760", Broker: "log.index.size.max.bytes",
		Doc: "The size of a segment's offset index.", valid: intAtLeast(4)},
	{Name: "segment.jitter.ms", Type: kmsg.ConfigTypeLong, Default: "0", Broker: "log.roll.jitter.ms",
		Doc: "Random jitter subtracted from segment.ms.", valid: longAtLeast(0),
		units: []unit{{"log.roll.jitter.hours", 3_600_000}}},
	{Name: "segment.ms", Type: kmsg.ConfigTypeLong, Default: "604800000", Broker: "log.roll.ms",
		Doc: "The time after which a segment is rolled even if not full.", valid: longAtLeast(1),
		units: []unit{{"log.roll.hours", 3_600_000}}},
	{Name: "unclean.leader.election.enable", Type: kmsg.ConfigTypeBoolean, Default: "false", Broker: "unclean.leader.election.enable",
		Doc: "Whether a replica that is not in sync may become leader; not acted on: Raft never elects a replica that lacks committed entries.", valid: boolean},
	{Name: "write.caching", Type: kmsg.ConfigTypeBoolean, Default: "false", Broker: WriteCachingDefault,
		Doc: "true acknowledges a write once a majority of replicas hold it in memory and fsyncs it within flush.ms; " +
			"false (the default) acknowledges it once a majority fsynced it. true trades durability for latency: " +
			"a crash of any processes loses nothing acknowledged while a majority of machines keep power, " +
			"but a power loss of a majority within flush.ms may lose acknowledged writes. " +
			"Partitions whose Raft log store always fsyncs (boltdb, wal) stay fsync-on-commit.",
		valid: boolean},
}

// Specs returns every topic config, sorted by name.
func Specs() []Spec { return slices.Clone(specs) }

// Lookup returns the topic config of that name.
func Lookup(name string) (Spec, bool) {
	i, ok := slices.BinarySearchFunc(specs, name, func(s Spec, n string) int { return strings.Compare(s.Name, n) })
	if !ok {
		return Spec{}, false
	}
	return specs[i], true
}

// WriteCachingDefault is the broker config that supplies write.caching's
// default (Redpanda's write_caching_default, in Kafka's spelling).
const WriteCachingDefault = "write.caching.default"

// Broker configs that are no topic config's synonym but may be set as
// cluster-wide dynamic defaults.
const (
	ProducerIDExpiration      = "producer.id.expiration.ms"
	TransactionalIDExpiration = "transactional.id.expiration.ms"
)

// brokerOnly are ProducerIDExpiration and TransactionalIDExpiration
// with Kafka's defaults and limits.
var brokerOnly = map[string]struct {
	dflt  int64
	valid validator
}{
	ProducerIDExpiration:      {86_400_000, longAtLeast(1)},
	TransactionalIDExpiration: {604_800_000, intAtLeast(1)},
}

// brokerSpec finds the topic config a broker config name is a synonym
// of, with its factor to the topic config's unit (1 for the synonym of
// the same unit).
func brokerSpec(name string) (Spec, int64, bool) {
	if name == "" {
		return Spec{}, 0, false
	}
	for _, s := range specs {
		if s.Broker == name {
			return s, 1, true
		}
		for _, u := range s.units {
			if u.name == name {
				return s, u.factor, true
			}
		}
	}
	return Spec{}, 0, false
}

// checkedMul is a*b, or false on overflow.
func checkedMul(a, b int64) (int64, bool) {
	if a == 0 || b == 1 {
		return a * b, true
	}
	if a > math.MaxInt64/b || a < math.MinInt64/b {
		return 0, false
	}
	return a * b, true
}
