package broker

import (
	"log/slog"
	"time"

	pebblevfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka-go/broker/kafkabackend"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/internal/diskguard"
	"github.com/minikafka/minikafka-go/internal/quota"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/multiraft"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// Config is everything a node needs to start. cmd/node fills it from a
// YAML file, MINIKAFKA_* environment variables and flags; tests fill it
// directly.
type Config struct {
	NodeID  int32  // Kafka broker id and Raft server id; > 0
	DataDir string // holds meta/ and partitions/

	KafkaAddr           string // host:port the Kafka listener binds
	AdvertisedKafkaAddr string // host:port clients are told; default KafkaAddr
	// Listeners are the node's Kafka listeners (listeners.go). Empty: one
	// PLAINTEXT listener on KafkaAddr, advertised as AdvertisedKafkaAddr.
	Listeners []ListenerConfig
	// SASLUsers are SCRAM users created when the cluster lacks them.
	SASLUsers []SASLUser
	// DelegationTokens are the delegation token settings (dtokens.go).
	DelegationTokens DelegationTokenConfig
	// ShareGroups configures KIP-932 share groups (shareconfig.go).
	ShareGroups kafkabackend.ShareConfig
	// AuthorizationEnabled makes the node check every request against the
	// cluster's ACLs (kafkabackend/acls.go); off, everything is allowed.
	AuthorizationEnabled bool
	// SuperUsers are principals ("User:<name>") that pass every check.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound allows access to a resource no ACL
	// applies to (Kafka's allow.everyone.if.no.acl.found); default off.
	AllowEveryoneIfNoACLFound bool
	// ConnectionFailedAuthenticationDelay delays the answer to a failed
	// SASL authentication and the close after it (Kafka's
	// connection.failed.authentication.delay.ms); 0: none.
	// MaxFailedAuthenticationsPerIP bounds the failed SASL
	// authentications from one IP address (an IPv6 /64) per
	// FailedAuthenticationsWindow; past it that address's attempts are
	// refused without checking a password (0: no limit).
	ConnectionFailedAuthenticationDelay time.Duration
	MaxFailedAuthenticationsPerIP       int
	FailedAuthenticationsWindow         time.Duration
	// ConsoleAdminKey turns on the web console's write actions for
	// visitors who present it (console.Config.AdminKey); empty: the
	// console is read-only.
	ConsoleAdminKey string

	RaftAddr           string // host:port for every Raft group and internal RPC
	AdvertisedRaftAddr string
	GossipAddr         string // host:port for memberlist
	AdvertisedGossip   string
	// RaftSourceAddr and GossipSourceAddr are local IPs that this node's
	// outgoing Raft sessions and gossip TCP streams leave from; empty lets
	// the system choose. Gossip UDP leaves from GossipAddr's socket.
	RaftSourceAddr   string
	GossipSourceAddr string
	Join             []string // gossip seeds (host:port); may include this node

	// BootstrapExpect is the number of nodes to wait for before the
	// metadata group is created; the first BootstrapExpect node ids seen are
	// its voters.
	BootstrapExpect int

	DefaultPartitions        int32
	DefaultReplicationFactor int16
	AutoCreateTopics         bool

	// MaxPartitions bounds the partitions of the cluster's topics, each a
	// Raft group on its replicas' nodes; a CreateTopics or
	// CreatePartitions past it gets POLICY_VIOLATION. The limit travels on
	// the metadata command and is checked when it is applied, so
	// concurrent requests cannot overshoot it together. The internal
	// topics are created regardless.
	MaxPartitions int32

	// MaxNodeReplicas bounds the partition replicas one node may hold (its
	// capacity: each replica is a Raft group, a log and a state machine on
	// it); a CreateTopics or CreatePartitions that would place more on a
	// node gets POLICY_VIOLATION, checked like MaxPartitions. 0: no bound.
	MaxNodeReplicas int32

	// OffsetsTopicPartitions and OffsetsTopicReplicationFactor shape the
	// internal topic __consumer_offsets when the cluster first needs it;
	// the replication factor is capped by the brokers alive then.
	OffsetsTopicPartitions        int32
	OffsetsTopicReplicationFactor int16

	// TxnTopicPartitions and TxnTopicReplicationFactor shape the internal
	// topic __transaction_state when the cluster first needs it
	// (transaction.state.log.num.partitions, .replication.factor); the
	// replication factor is capped by the brokers alive then. Kafka's 50
	// partitions become 16, as for __consumer_offsets.
	TxnTopicPartitions        int32
	TxnTopicReplicationFactor int16
	// TxnMaxTimeout bounds the transaction timeout a producer may ask for
	// (transaction.max.timeout.ms). TxnAbortInterval is how often a
	// coordinator aborts timed-out transactions
	// (transaction.abort.timed.out.transaction.cleanup.interval.ms).
	TxnMaxTimeout    time.Duration
	TxnAbortInterval time.Duration
	// TxnPartitionVerification makes a partition leader ask the
	// coordinator, once per transaction, whether a transactional batch's
	// partition was added to its transaction, and refuse the batch with
	// INVALID_TXN_STATE if not (KIP-890; Kafka's
	// transaction.partition.verification.enable, default true).
	TxnPartitionVerification bool
	// TxnPendingOffsetsCheckInterval is how often the leader of a
	// __consumer_offsets partition asks the transaction coordinators about
	// the transactional offset commits pending there for longer than this
	// interval, and aborts those whose transaction is no longer ongoing
	// (ours; Kafka has no such check).
	TxnPendingOffsetsCheckInterval time.Duration

	// GroupInitialRebalanceDelay is how long the first rebalance of an
	// empty group waits for more members (Kafka's
	// group.initial.rebalance.delay.ms); 0 means none.
	// GroupMinSessionTimeout and GroupMaxSessionTimeout bound the session
	// timeouts members may ask for (group.min/max.session.timeout.ms).
	GroupInitialRebalanceDelay time.Duration
	GroupMinSessionTimeout     time.Duration
	GroupMaxSessionTimeout     time.Duration
	// GroupConsumer tunes KIP-848 consumer groups (group.consumer.*);
	// zero fields take Kafka's defaults.
	GroupConsumer groupcoord.ConsumerConfig
	// GroupShare tunes KIP-932 share groups (group.share.*); zero fields
	// take Kafka's defaults.
	GroupShare groupcoord.ShareConfig

	// OffsetsRetention is how long committed offsets are kept after their
	// group became empty, or after their commit for a consumer without a
	// group (Kafka's offsets.retention.minutes, KIP-211); the leader of
	// each __consumer_offsets partition expires them every
	// OffsetsRetentionCheckInterval (offsets.retention.check.interval.ms).
	OffsetsRetention              time.Duration
	OffsetsRetentionCheckInterval time.Duration
	// TransactionalIDExpirationMs is the node's static
	// transactional.id.expiration.ms: how long a transactional id without
	// an open transaction is remembered; the cluster-wide dynamic default
	// wins over it. The leader of each __transaction_state partition
	// forgets idle ids every TxnRemoveExpiredInterval
	// (transaction.remove.expired.transaction.cleanup.interval.ms).
	TransactionalIDExpirationMs int64
	TxnRemoveExpiredInterval    time.Duration

	// PartitionRaft and MetaRaft are the Raft timings of partition groups
	// and of the metadata group.
	PartitionRaft multiraft.Timing
	MetaRaft      multiraft.Timing
	// PartitionLogStore is the Raft log store of new partition groups
	// (YAML raft.log_store): "boltdb", "wal" or "pebble" (one DB for the
	// node, in DataDir/raftlog). A partition whose dir already holds a
	// store keeps it; the metadata group always uses boltdb.
	PartitionLogStore multiraft.LogStore

	SegmentBytes int64 // partition log segment size
	// PageCacheKeepBytes is how much of each partition's newest log data
	// stays in the OS page cache once fsynced; older data is dropped from
	// it (seglog.Options.CacheKeepBytes). Negative: never dropped.
	PageCacheKeepBytes int64
	ProducerWindow     int   // batches remembered per producer (Kafka: 5)
	MaxRequestBytes    int32 // largest Kafka request frame accepted
	// PartitionMaxOpenFiles bounds the partition log segment files and
	// applied-index journals the node holds open at once (a vfs.FileCache
	// its replicas share): past it the least recently used are closed and
	// reopened on their next read or write. 0: no bound, two descriptors
	// per replica and one per sealed segment.
	PartitionMaxOpenFiles int

	// MaxConnections and MaxConnectionsPerIP bound the Kafka connections
	// served at once, in all and from one IP; ConnectionsMaxIdle closes a
	// connection silent that long with no request in flight.
	MaxConnections      int
	MaxConnectionsPerIP int
	ConnectionsMaxIdle  time.Duration
	// QueuedMaxRequestBytes bounds the memory of the Kafka requests read
	// and not yet answered, node-wide (Kafka's queued.max.request.bytes;
	// kafkaapi.Config.QueuedMaxRequestBytes says how).
	QueuedMaxRequestBytes int64

	// LogRetentionMs, LogRetentionBytes and MessageMaxBytes are the node's
	// static log.retention.ms, log.retention.bytes and message.max.bytes:
	// the defaults of topics' retention.ms, retention.bytes and
	// max.message.bytes below the cluster-wide dynamic defaults.
	// ProducerIDExpirationMs is its producer.id.expiration.ms: how long a
	// producer may stay idle before partitions forget it.
	LogRetentionMs         int64
	LogRetentionBytes      int64
	MessageMaxBytes        int32
	ProducerIDExpirationMs int64

	// WriteCachingDefault and LogFlushIntervalMs are the node's static
	// write.caching.default and log.flush.interval.ms: the defaults of
	// topics' write.caching and flush.ms below the cluster-wide dynamic
	// defaults. LogFlushIntervalMs is 100 (Redpanda's) rather than Kafka's
	// Long.MAX, so that a partition in write-caching mode fsyncs what it
	// acknowledged within 100 ms unless its topic says otherwise.
	WriteCachingDefault bool
	LogFlushIntervalMs  int64

	// RetentionCheckInterval is how often a partition leader applies its
	// topic's retention.ms and retention.bytes (Kafka's
	// log.retention.check.interval.ms). ProducerExpirationCheckInterval is
	// how often it expires idle producers (producer.id.expiration.check.
	// interval.ms). MaxProducers bounds each partition's producer table;
	// it decides produce outcomes, so every node must use the same value.
	RetentionCheckInterval          time.Duration
	ProducerExpirationCheckInterval time.Duration
	// CleanerBackoff is how often a partition leader looks for compacted
	// topics' partitions to clean (Kafka's log.cleaner.backoff.ms).
	CleanerBackoff time.Duration
	// CleanInternalTopics has leaders clean __consumer_offsets and
	// __transaction_state too, as Kafka does (on by default).
	CleanInternalTopics bool
	// CleanerThreads bounds the cleanings running at once on this node
	// (Kafka's log.cleaner.threads): each streams the log and holds a map
	// of the keys of what it cleans. CleanerDedupeBufferSize bounds those
	// maps together (Kafka's log.cleaner.dedupe.buffer.size): a cleaning
	// whose dirty part holds more keys than its share cleans that far, and
	// the next goes on from there.
	CleanerThreads          int
	CleanerDedupeBufferSize int64
	MaxProducers            int

	// LeaderRebalanceInterval is how often a node hands partitions it leads
	// back to their preferred leader (the first replica). 0 disables it.
	LeaderRebalanceInterval time.Duration

	// NodeUnavailableTimeout is how long a registered node may be gone
	// from gossip before the metadata leader moves its replicas to live
	// nodes (controller/heal.go). 0 disables it.
	NodeUnavailableTimeout time.Duration
	// ReplicaMoveThrottle bounds, in bytes per second, what a node sends
	// to the new replicas of partitions it leads while they catch up in a
	// reassignment. 0 means no bound.
	ReplicaMoveThrottle int
	// Security is how nodes authenticate each other (security.go).
	Security SecurityConfig

	// Tuning holds every other timeout and limit of the node; zero fields
	// take their defaults.
	Tuning Tuning

	// PartitionFS holds the partition replicas' logs and FSM state (not
	// their Raft logs, nor the metadata group's). Nil means the OS; tests
	// pass a vfs.Faulty to fail the disk under a running node.
	PartitionFS vfs.FS

	// Storage is the data disk's reserve and alert thresholds
	// (storage.go).
	Storage StorageConfig
	// DiskStat reads the data disk's size and free space; nil means the
	// OS's statfs. Tests pass a fake disk.
	DiskStat diskguard.StatFunc
	// RaftLogFS holds the node-wide Raft log store of pebble partitions
	// (DataDir/raftlog). Nil means the OS; tests fail the disk under a
	// running node through it.
	RaftLogFS pebblevfs.FS
	// QuotaWindowNum and QuotaWindowSizeSeconds are the client quotas'
	// sliding window: rates are measured over QuotaWindowNum windows of
	// QuotaWindowSizeSeconds (Kafka's quota.window.num, 11, and
	// quota.window.size.seconds, 1).
	QuotaWindowNum         int
	QuotaWindowSizeSeconds int
	// ClientQuotas is where the node reads client quotas (quota.Source);
	// nil means the metadata state's (AlterClientQuotas). Tests pass a
	// fake.
	ClientQuotas quota.Source

	Logger *slog.Logger
}

// minWait is the least time a bounded wait is given when its caller's
// deadline has (nearly) passed: to raft, a timeout of zero means none.
const minWait = time.Millisecond

// logPrecision is what durations in logs are rounded to.
const logPrecision = time.Millisecond

// DefaultMaxNodeReplicas is max_partition_replicas_per_node's default:
// room for the default max_partitions at replication factor 3 on 3 nodes
// plus the internal topics, which docs/scale.md measures on a 2-core node
// (memory and idle CPU per replica).
const DefaultMaxNodeReplicas = 12_000

// NodeCapacityConfig is the broker config (DescribeConfigs of a broker)
// that reports max_partition_replicas_per_node.
const NodeCapacityConfig = kafkabackend.NodeCapacityConfig

// DefaultConfig is a single node on the loopback ports of configs/single.yaml.
// defaultPartitionRaft is the Raft timing of partition groups.
func defaultPartitionRaft() multiraft.Timing {
	partitionRaft := multiraft.DefaultTiming()
	// A partition leader also sends each follower an AppendEntries every
	// commit timeout so that it learns the commit index when writes stop;
	// with hundreds of groups that traffic costs real CPU while idle. Our
	// followers serve no reads and a new leader commits a no-op at once, so
	// they can learn it late.
	partitionRaft.CommitTimeout = time.Second
	// A partition's entry is a produce request, up to a MiB or more, so
	// raft's 256 entries per AppendEntries made RPCs of hundreds of MiB
	// for a follower that fell behind, which then outran the call
	// timeout and were sent again (seconds without commits, elections).
	// 16 bounds an RPC near 16 MiB and still batches plenty of fsyncs
	// (docs/results/performance-log-2026-12-01.md: 1.3–1.5x the records/s of 256 at peak).
	partitionRaft.MaxAppendEntries = 16
	return partitionRaft
}

func DefaultConfig() Config {
	return Config{
		NodeID:                   1,
		DataDir:                  "./data/single",
		KafkaAddr:                "127.0.0.1:9092",
		RaftAddr:                 "127.0.0.1:9192",
		GossipAddr:               "127.0.0.1:9292",
		BootstrapExpect:          1,
		DefaultPartitions:        1,
		DelegationTokens:         DefaultDelegationTokens(),
		ShareGroups:              DefaultShareGroups(),
		DefaultReplicationFactor: 1,
		AutoCreateTopics:         true,
		MaxPartitions:            10000,
		MaxNodeReplicas:          DefaultMaxNodeReplicas,
		// Kafka's default is 50 partitions; each of ours is a Raft group,
		// whose idle cost a small cluster notices.
		OffsetsTopicPartitions:        16,
		OffsetsTopicReplicationFactor: 3,
		TxnTopicPartitions:            16,
		TxnTopicReplicationFactor:     3,
		TxnMaxTimeout:                 15 * time.Minute,
		TxnAbortInterval:              10 * time.Second,
		TxnPartitionVerification:      true,
		GroupInitialRebalanceDelay:    3 * time.Second,
		GroupMinSessionTimeout:        6 * time.Second,
		GroupMaxSessionTimeout:        30 * time.Minute,
		OffsetsRetention:              7 * 24 * time.Hour, // Kafka's defaults, these four
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		TransactionalIDExpirationMs:   7 * 24 * 3600 * 1000,
		TxnRemoveExpiredInterval:      time.Hour,
		PartitionRaft:                 defaultPartitionRaft(),
		MetaRaft:                      multiraft.DefaultTiming(),
		PartitionLogStore:             multiraft.LogStorePebble,
		SegmentBytes:                  seglog.DefaultSegmentBytes,
		PageCacheKeepBytes:            seglog.DefaultCacheKeepBytes,
		ProducerWindow:                5,
		MaxRequestBytes:               100 << 20,
		LeaderRebalanceInterval:       10 * time.Second,
		NodeUnavailableTimeout:        15 * time.Minute,
		ReplicaMoveThrottle:           32 << 20,
		MaxConnections:                10000,
		MaxConnectionsPerIP:           10000,
		ConnectionsMaxIdle:            10 * time.Minute,
		QueuedMaxRequestBytes:         kafkaapi.DefaultQueuedMaxRequestBytes,
		// Kafka checks every 5 minutes; a Raft entry per led partition
		// every 30 s is cheap, and small topics shrink when users expect.
		RetentionCheckInterval:          30 * time.Second,
		CleanerBackoff:                  15 * time.Second,
		CleanInternalTopics:             true,
		CleanerThreads:                  1,
		CleanerDedupeBufferSize:         128 << 20,
		LogRetentionMs:                  7 * 24 * 3600 * 1000, // Kafka's defaults
		LogRetentionBytes:               -1,
		MessageMaxBytes:                 topicconfig.DefaultMaxMessageBytes,
		ProducerIDExpirationMs:          24 * 3600 * 1000,
		LogFlushIntervalMs:              topicconfig.DefaultWriteCachingFlushMs,
		ProducerExpirationCheckInterval: 10 * time.Minute,
		MaxProducers:                    100_000,
		Tuning:                          DefaultTuning(),
		// A wedged group heals within two intervals, about as soon as a
		// transaction abandoned with Kafka's default transaction.timeout.ms
		// (60 s) is aborted; a transaction pending for longer costs one
		// verification round trip per interval.
		TxnPendingOffsetsCheckInterval: 30 * time.Second,
		QuotaWindowNum:                 quota.DefaultSamples, QuotaWindowSizeSeconds: int(quota.DefaultWindow / time.Second),

		// Kafka's connection.failed.authentication.delay.ms, and a bound on
		// the key derivations (PBKDF2) one IP can make a node do.
		ConnectionFailedAuthenticationDelay: kafkaapi.DefaultFailedAuthenticationDelay,
		MaxFailedAuthenticationsPerIP:       kafkaapi.DefaultMaxFailedAuthenticationsPerIP,
		FailedAuthenticationsWindow:         kafkaapi.DefaultFailedAuthenticationsWindow,
		// With Pebble's 256 (multiraft) and the node's few others, under
		// 800 descriptors besides sockets: room for a few hundred
		// connections within a ulimit -n of 1024. 256 partitions written
		// at once keep their segment and journal open.
		PartitionMaxOpenFiles: 512,
		Storage:               DefaultStorage(),
	}
}
