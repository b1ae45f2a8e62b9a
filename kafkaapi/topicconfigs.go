package kafkaapi

import "github.com/twmb/franz-go/pkg/kmsg"

// topicConfig is one of Kafka's topic configs: its type, Kafka's default,
// and the broker config that supplies the default when the node sets it
// (Kafka's ServerTopicConfigSynonyms).
type topicConfig struct {
	name   string
	typ    kmsg.ConfigType
	value  string // Kafka's default
	broker string // the broker config it defaults to; "" if none
	doc    string
}

const maxLong = "9223372036854775807"

// topicConfigs are Kafka's topic configs (as of Kafka 3.9, without the
// ones Kafka 4 removed), sorted by name. Topics have no configs of their
// own yet: each takes the node's value of its broker synonym, else
// Kafka's default. Those the node acts on are reported by the backend
// under the broker names (for example log.segment.bytes, log.retention.ms).
var topicConfigs = []topicConfig{
	{"cleanup.policy", kmsg.ConfigTypeList, "delete", "log.cleanup.policy", "What happens to old log segments: delete or compact."},
	{"compression.gzip.level", kmsg.ConfigTypeInt, "-1", "compression.gzip.level", "The gzip level when compression.type is gzip."},
	{"compression.lz4.level", kmsg.ConfigTypeInt, "9", "compression.lz4.level", "The lz4 level when compression.type is lz4."},
	{"compression.type", kmsg.ConfigTypeString, "producer", "compression.type", "The compression of stored batches; producer keeps what the producer sent."},
	{"compression.zstd.level", kmsg.ConfigTypeInt, "3", "compression.zstd.level", "The zstd level when compression.type is zstd."},
	{"delete.retention.ms", kmsg.ConfigTypeLong, "86400000", "log.cleaner.delete.retention.ms", "How long delete tombstones are kept in compacted topics."},
	{"file.delete.delay.ms", kmsg.ConfigTypeLong, "60000", "log.segment.delete.delay.ms", "The wait before deleting a file from the file system."},
	{"flush.messages", kmsg.ConfigTypeLong, maxLong, "log.flush.interval.messages", "Messages written between forced fsyncs of the log."},
	{"flush.ms", kmsg.ConfigTypeLong, maxLong, "log.flush.interval.ms", "Milliseconds between forced fsyncs of the log."},
	{"follower.replication.throttled.replicas", kmsg.ConfigTypeList, "", "", "Replicas whose follower replication is throttled."},
	{"index.interval.bytes", kmsg.ConfigTypeInt, "4096", "log.index.interval.bytes", "Log bytes between offset index entries."},
	{"leader.replication.throttled.replicas", kmsg.ConfigTypeList, "", "", "Replicas whose leader replication is throttled."},
	{"local.retention.bytes", kmsg.ConfigTypeLong, "-2", "log.local.retention.bytes", "Local bytes kept before tiered storage takes over; -2 follows retention.bytes."},
	{"local.retention.ms", kmsg.ConfigTypeLong, "-2", "log.local.retention.ms", "Local time kept before tiered storage takes over; -2 follows retention.ms."},
	{"max.compaction.lag.ms", kmsg.ConfigTypeLong, maxLong, "log.cleaner.max.compaction.lag.ms", "The longest a message stays ineligible for compaction."},
	{"max.message.bytes", kmsg.ConfigTypeInt, "1048588", "message.max.bytes", "The largest record batch size allowed."},
	{"message.timestamp.after.max.ms", kmsg.ConfigTypeLong, maxLong, "log.message.timestamp.after.max.ms", "How far a message timestamp may be ahead of the broker's clock."},
	{"message.timestamp.before.max.ms", kmsg.ConfigTypeLong, maxLong, "log.message.timestamp.before.max.ms", "How far a message timestamp may be behind the broker's clock."},
	{"message.timestamp.type", kmsg.ConfigTypeString, "CreateTime", "log.message.timestamp.type", "Whether message timestamps are the producer's (CreateTime) or the broker's (LogAppendTime)."},
	{"min.cleanable.dirty.ratio", kmsg.ConfigTypeDouble, "0.5", "log.cleaner.min.cleanable.ratio", "The dirty share of the log above which it is compacted."},
	{"min.compaction.lag.ms", kmsg.ConfigTypeLong, "0", "log.cleaner.min.compaction.lag.ms", "The shortest a message stays uncompacted."},
	{"min.insync.replicas", kmsg.ConfigTypeInt, "1", "min.insync.replicas", "Replicas that must acknowledge a write with acks=all."},
	{"preallocate", kmsg.ConfigTypeBoolean, "false", "log.preallocate", "Whether segment files are preallocated."},
	{"remote.storage.enable", kmsg.ConfigTypeBoolean, "false", "", "Whether the topic uses tiered storage."},
	{"retention.bytes", kmsg.ConfigTypeLong, "-1", "log.retention.bytes", "The partition size above which old segments are deleted; -1 is no limit."},
	{"retention.ms", kmsg.ConfigTypeLong, "604800000", "log.retention.ms", "How long data is kept; -1 is forever."},
	{"segment.bytes", kmsg.ConfigTypeInt, "1073741824", "log.segment.bytes", "The size of a log segment file."},
	{"segment.index.bytes", kmsg.ConfigTypeInt, "10485760", "log.index.size.max.bytes", "The size of a segment's offset index."},
	{"segment.jitter.ms", kmsg.ConfigTypeLong, "0", "log.roll.jitter.ms", "Random jitter subtracted from segment.ms."},
	{"segment.ms", kmsg.ConfigTypeLong, "604800000", "log.roll.ms", "The time after which a segment is rolled even if not full."},
	{"unclean.leader.election.enable", kmsg.ConfigTypeBoolean, "false", "unclean.leader.election.enable", "Whether a replica that is not in sync may become leader."},
}
