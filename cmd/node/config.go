package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/multiraft"
)

// key is one configuration key: its YAML name (dots for nesting), its
// default and the help text of its flag. The flag is the key with dots and
// underscores turned into dashes; the environment variable is MINIKAFKA_
// and the key in upper case with dots turned into underscores.
type key struct {
	name string
	def  any
	help string
}

func keys() []key {
	d := broker.DefaultConfig()
	ks := []key{
		{"node_id", int(d.NodeID), "this node's broker id (a positive integer, unique in the cluster)"},
		{"data_dir", d.DataDir, "directory for all of this node's data"},
		{"kafka_addr", d.KafkaAddr, "host:port the Kafka listener binds"},
		{"advertised_kafka_addr", "", "host:port clients connect to (default kafka_addr)"},
		{"raft_addr", d.RaftAddr, "host:port for Raft and internal RPC"},
		{"advertised_raft_addr", "", "host:port other nodes reach raft_addr at (default raft_addr)"},
		{"gossip_addr", d.GossipAddr, "host:port for membership gossip"},
		{"advertised_gossip_addr", "", "host:port other nodes reach gossip_addr at (default gossip_addr)"},
		{"raft_source_addr", "", "local IP this node's outgoing Raft connections leave from (default: the system's choice)"},
		{"gossip_source_addr", "", "local IP this node's outgoing gossip TCP streams leave from (default: the system's choice)"},
		{"join", []string{}, "gossip seeds, host:port, comma-separated"},
		{"bootstrap_expect", d.BootstrapExpect, "number of nodes to wait for before creating the cluster"},
		{"default_partitions", int(d.DefaultPartitions), "partitions of an auto-created topic"},
		{"default_replication_factor", int(d.DefaultReplicationFactor), "replication factor of an auto-created topic"},
		{"auto_create_topics", d.AutoCreateTopics, "create unknown topics on first use"},
		{"authorization_enabled", d.AuthorizationEnabled, "check every Kafka request against the cluster's ACLs (off: everything is allowed)"},
		{"super_users", []string{}, "principals (User:<name>) that pass every ACL check, comma-separated"},
		{"allow_everyone_if_no_acl_found", d.AllowEveryoneIfNoACLFound, "allow access to a resource no ACL applies to (allow.everyone.if.no.acl.found)"},
		{"max_partitions", int(d.MaxPartitions), "most partitions the cluster's topics may have in all (each is a Raft group)"},
		{"max_partition_replicas_per_node", int(d.MaxNodeReplicas), "most partition replicas one node may hold, internal topics included (its capacity; 0 = no bound)"},
		{"offsets_topic_partitions", int(d.OffsetsTopicPartitions), "partitions of the internal topic __consumer_offsets, created on first need"},
		{"offsets_topic_replication_factor", int(d.OffsetsTopicReplicationFactor), "replication factor of __consumer_offsets (at most the live brokers when it is created)"},
		{"transaction_state_partitions", int(d.TxnTopicPartitions), "partitions of the internal topic __transaction_state, created on first need"},
		{"transaction_state_replication_factor", int(d.TxnTopicReplicationFactor), "replication factor of __transaction_state (at most the live brokers when it is created)"},
		{"transaction_max_timeout", d.TxnMaxTimeout, "longest transaction timeout a producer may ask for (transaction.max.timeout.ms)"},
		{"transaction_abort_interval", d.TxnAbortInterval, "how often coordinators abort timed-out transactions"},
		{"transaction_partition_verification", d.TxnPartitionVerification, "refuse a transactional batch or offset commit whose partition its coordinator says was not added to the transaction (transaction.partition.verification.enable)"},
		{"transaction_pending_offsets_check_interval", d.TxnPendingOffsetsCheckInterval, "how often group coordinators abort transactional offset commits pending longer than this whose transaction its coordinator no longer has"},
		{"group_initial_rebalance_delay", d.GroupInitialRebalanceDelay, "how long a new group's first rebalance waits for more members (0 = none)"},
		{"group_min_session_timeout", d.GroupMinSessionTimeout, "shortest session timeout a group member may ask for"},
		{"group_max_session_timeout", d.GroupMaxSessionTimeout, "longest session timeout a group member may ask for"},
		{"offsets_retention_minutes", int(d.OffsetsRetention / time.Minute), "how long committed offsets are kept after their group became empty, or after their commit for a consumer without a group (offsets.retention.minutes)"},
		{"offsets_retention_check_interval", d.OffsetsRetentionCheckInterval, "how often group coordinators expire offsets past offsets_retention_minutes (offsets.retention.check.interval.ms)"},
		{"transactional_id_expiration_ms", d.TransactionalIDExpirationMs, "how long a transactional id without an open transaction is remembered (transactional.id.expiration.ms)"},
		{"transaction_remove_expired_interval", d.TxnRemoveExpiredInterval, "how often transaction coordinators forget transactional ids idle past transactional_id_expiration_ms (transaction.remove.expired.transaction.cleanup.interval.ms)"},
		{"segment_bytes", d.SegmentBytes, "partition log segment size in bytes"},
		{"log_page_cache_keep_bytes", d.PageCacheKeepBytes, "bytes of each partition's newest log data kept in the OS page cache once fsynced; older data is dropped from it so that new writes reuse its pages (-1: never drop, as Kafka)"},
		{"partition_max_open_files", d.PartitionMaxOpenFiles, "most partition log segment and journal files the node holds open at once; past it the least recently used are closed (fsynced first if written since their last fsync) and reopened on their next use (0 = no bound; else at least 16)"},
		{"producer_window", d.ProducerWindow, "batches remembered per producer for duplicate detection"},
		{"max_request_bytes", int(d.MaxRequestBytes), "largest Kafka request accepted, in bytes"},
		{"queued_max_request_bytes", d.QueuedMaxRequestBytes, "bytes of Kafka requests read and not yet answered, node-wide, with what decoding them costs (queued.max.request.bytes); past it reading waits; at least twice max_request_bytes"},
		{"max_connections", d.MaxConnections, "most Kafka connections served at once"},
		{"max_connections_per_ip", d.MaxConnectionsPerIP, "most Kafka connections served at once from one IP address"},
		{"connections_max_idle", d.ConnectionsMaxIdle, "close a Kafka connection silent this long with no request in flight"},
		{"connection_failed_authentication_delay", d.ConnectionFailedAuthenticationDelay, "wait this long before answering a failed SASL authentication and closing its connection (connection.failed.authentication.delay.ms; 0 = none)"},
		{"max_failed_authentications_per_ip", d.MaxFailedAuthenticationsPerIP, "failed SASL authentications allowed from one IP (an IPv6 /64) per failed_authentications_window; past it its attempts are refused without checking the password (0 = no limit)"},
		{"failed_authentications_window", d.FailedAuthenticationsWindow, "the window of max_failed_authentications_per_ip, over which its allowance refills"},
		{"log_retention_ms", d.LogRetentionMs, "topics' default retention.ms: how long data is kept (-1 = forever)"},
		{"log_retention_bytes", d.LogRetentionBytes, "topics' default retention.bytes: partition size above which old segments go (-1 = no limit)"},
		{"message_max_bytes", int(d.MessageMaxBytes), "topics' default max.message.bytes: the largest record batch accepted"},
		{"write_caching_default", d.WriteCachingDefault, "topics' default write.caching: acknowledge a write once a majority holds it in memory and fsync it within flush.ms (partitions on the boltdb and wal log stores always fsync first; set it alike on every node)"},
		{"log_flush_interval_ms", d.LogFlushIntervalMs, "topics' default flush.ms: in write-caching mode the longest an acknowledged write waits for fsync (0 = fsync before acknowledging)"},
		{"producer_id_expiration_ms", d.ProducerIDExpirationMs, "how long an idle idempotent producer is remembered (producer.id.expiration.ms)"},
		{"log_retention_check_interval", d.RetentionCheckInterval, "how often partition leaders apply retention.ms and retention.bytes"},
		{"log_cleaner_backoff", d.CleanerBackoff, "how often partition leaders clean the partitions of topics with cleanup.policy=compact (log.cleaner.backoff.ms)"},
		{"replica_lag_time_max", d.Tuning.ReplicaLagMax, "a follower that has not answered its partition leader, or not caught up with it, for this long leaves the ISR (replica.lag.time.max.ms): Metadata, the status page, /metrics and the console report the partition under-replicated"},
		{"log_cleaner_threads", d.CleanerThreads, "cleanings that run at once on this node (log.cleaner.threads); each streams the log through 2 MiB of buffers and holds a map of its keys"},
		{"log_cleaner_dedupe_buffer_size", d.CleanerDedupeBufferSize, "bytes the cleanings' maps of keys hold together, about 64 and the key's length per key (log.cleaner.dedupe.buffer.size); a partition with more keys to clean is cleaned in several passes"},
		{"log_cleaner_internal_topics", d.CleanInternalTopics, "also clean __consumer_offsets and __transaction_state, as Kafka does; false keeps every record of them"},
		{"producer_id_expiration_check_interval", d.ProducerExpirationCheckInterval, "how often partition leaders forget producers idle past producer.id.expiration.ms"},
		{"max_producers_per_partition", d.MaxProducers, "most idempotent producers one partition tracks (the same on every node)"},
		{"leader_rebalance_interval", d.LeaderRebalanceInterval, "how often leadership returns to preferred replicas (0 = never)"},
		{"node_unavailable_timeout", d.NodeUnavailableTimeout, "how long a node may be gone before its replicas are re-created on live nodes (0 = never)"},
		{"replica_move_throttle", d.ReplicaMoveThrottle, "bytes per second a node sends to new replicas catching up in a reassignment (0 = no bound; at least 65536)"},
		{"log_level", "info", "debug, info, warn, error or off"},
		{"memory_limit", int64(0), "bytes of memory the node's Go heap aims to stay under (the runtime's soft limit, as GOMEMLIMIT, which wins when set; 0 = 80% of the container's or machine's memory)"},
		{"gc_min_heap", int64(defaultGCMinHeap), "bytes the Go heap may grow to before a collection however little is live (GOGC is raised while the live heap is small; at most a quarter of memory_limit; GOGC, when set, wins; 0 = off)"},
		{"log_rate_limit", defaultLogRateLimit, "log lines of one kind (level, message and logger, whatever the partition) written per log_rate_interval; the rest are counted and reported in one line at the interval's end (0 = no limit)"},
		{"log_rate_interval", logging.DefaultRateInterval, "the window of log_rate_limit"},
		{"debug_addr", "", "host:port serving Go's /debug/pprof profiles over HTTP (empty = off; bind it to loopback)"},
		{"admin_addr", defaultAdminAddr, "host:port serving /metrics (Prometheus), /livez, /readyz, the status page / and the web console /console/ over HTTP (empty = off; no authentication but the console's SASL login, so loopback unless the network is trusted)"},
		{"console_admin_key", "", "a secret of at least 16 characters that turns on the web console's write actions (create and delete topics, reset a group's offsets) for visitors who enter it; their ACLs still apply (empty = the console is read-only)"},
	}
	ks = append(append(append(ks, securityKeys()...), consumerGroupKeys()...), shareGroupKeys()...)
	ks = append(append(ks, storageKeys(d.Storage)...), quotaKeys(d)...)
	return append(ks, groupKeys(d)...)
}

// groupKeys are the Raft groups' keys: partition groups', then the
// metadata group's.
func groupKeys(d broker.Config) []key {
	ks := raftKeys("raft", "partition Raft groups", d.PartitionRaft)
	ks = append(ks, key{"raft.log_store", string(d.PartitionLogStore), "partition Raft groups: log store of new partitions, boltdb, wal or pebble (one DB per node, in data_dir/raftlog; an existing partition keeps its own)"})
	ks = append(ks, key{"raft.parallel_leader_write", !d.Tuning.Raft.SerialLeaderWrite, "Raft groups: a leader stores new entries in its own log while it sends them to followers, and counts its own copy toward the commit once stored (false: it stores them before sending, as upstream hashicorp/raft; one fsync longer per commit)"})
	return append(ks, raftKeys("meta_raft", "metadata Raft group", d.MetaRaft)...)
}

// raftKeys are the Raft timing keys of a group kind under prefix.
func raftKeys(prefix, what string, t multiraft.Timing) []key {
	return []key{
		{prefix + ".heartbeat_timeout", t.HeartbeatTimeout, what + ": follower waits this long without a leader before an election"},
		{prefix + ".election_timeout", t.ElectionTimeout, what + ": candidate waits this long for votes"},
		{prefix + ".leader_heartbeat_timeout", t.LeaderHeartbeatTimeout, what + ": heartbeat timeout while leading (heartbeats every tenth to fifth of it; 0 = heartbeat_timeout; at most 3 times it)"},
		{prefix + ".leader_lease_timeout", t.LeaderLeaseTimeout, what + ": leader steps down after this long without a quorum"},
		{prefix + ".commit_timeout", t.CommitTimeout, what + ": longest wait before an idle leader sends the commit index"},
		{prefix + ".max_append_entries", t.MaxAppendEntries, what + ": most entries per AppendEntries RPC"},
		{prefix + ".max_inflight_appends", t.MaxInflightAppends, what + ": AppendEntries RPCs pipelined to a follower that keeps up (0 = one at a time; 2..64; wants a short commit_timeout)"},
		{prefix + ".snapshot_interval", t.SnapshotInterval, what + ": how often to check whether to snapshot"},
		{prefix + ".snapshot_threshold", t.SnapshotThreshold, what + ": new entries since the last snapshot that trigger one"},
		{prefix + ".trailing_logs", t.TrailingLogs, what + ": entries kept after a snapshot for followers to catch up"},
		{prefix + ".snapshot_bytes", t.SnapshotBytes, what + ": bytes of entries past trailing_bytes that trigger a snapshot (0 = by count only; at most 1/32 of the data disk)"},
		{prefix + ".trailing_bytes", t.TrailingBytes, what + ": most bytes of entries kept after a snapshot, with trailing_logs (at most 1/128 of the data disk)"},
	}
}

// storageKeys are the keys of the data disk's reserve, under Redpanda's
// names.
func storageKeys(d broker.StorageConfig) []key {
	return []key{
		{"storage_min_free_bytes", d.MinFreeBytes, "free bytes of the data disk below which produce and new partitions are refused with KAFKA_STORAGE_ERROR while reads and deletes go on (0 = storage_min_free_percent of the disk, at most 5 GiB; never below what the node needs to restart)"},
		{"storage_min_free_percent", d.MinFreePercent, "the reserve in percent of the data disk, when storage_min_free_bytes is 0"},
		{"storage_space_alert_free_threshold_bytes", d.AlertFreeBytes, "free bytes below which the data disk counts as low (metrics, status page, log); the larger of this and the percent"},
		{"storage_space_alert_free_threshold_percent", d.AlertFreePercent, "free space in percent of the data disk below which it counts as low"},
	}
}

// securityKeys are the keys of how nodes authenticate each other, and of
// delegation tokens.
func securityKeys() []key {
	t := broker.DefaultDelegationTokens()
	return []key{
		{"delegation_token_secret_key", "", "delegation.token.secret.key: the key of delegation tokens' HMACs, the same on every node; turns delegation tokens on, with a SASL listener (empty = off: the token APIs answer DELEGATION_TOKEN_AUTH_DISABLED)"},
		{"delegation_token_max_lifetime_ms", t.MaxLifetimeMs, "delegation.token.max.lifetime.ms: no delegation token lives longer, however renewed"},
		{"delegation_token_expiry_time_ms", t.ExpiryTimeMs, "delegation.token.expiry.time.ms: a delegation token's life from its creation or last renewal, unless the request asks for less"},
		{"delegation_token_expiry_check_interval_ms", t.ExpiryCheckIntervalMs, "delegation.token.expiry.check.interval.ms: how often the metadata leader removes expired delegation tokens"},
		{"raft_tls_cert_file", "", "PEM certificate of this node for mutual TLS on raft_addr; must name node_id (make certs); with raft_tls_key_file and raft_tls_ca_file"},
		{"raft_tls_key_file", "", "PEM key of raft_tls_cert_file"},
		{"raft_tls_ca_file", "", "PEM CA bundle that other nodes' certificates must chain to"},
		{"gossip_keys", []string{}, "base64 keys of 16, 24 or 32 bytes that encrypt gossip; the first encrypts, all decrypt (empty = gossip in the clear)"},
		{"cluster_label", "", "label on every gossip message; messages with another label are dropped"},
		{"inter_broker_listener", "", "listener other nodes use for this node's Kafka API (default the first PLAINTEXT listener, else the first)"},
		{"inter_broker_sasl_mechanism", "", "SASL mechanism of this node's requests to other nodes (default SCRAM-SHA-512 when the listener enables it)"},
		{"inter_broker_sasl_user", "", "SASL user of this node's requests to other nodes"},
		{"inter_broker_sasl_password", "", "SASL password of inter_broker_sasl_user"},
		{"inter_broker_tls_ca_file", "", "PEM CA bundle other nodes' TLS inter-broker listeners are checked against (default raft_tls_ca_file)"},
		{"raft_allow_unauthenticated", false, "start with a SASL listener or authorization_enabled although raft_addr takes unauthenticated peers (no raft_tls_*)"},
	}
}

func flagName(k string) string { return strings.NewReplacer(".", "-", "_", "-").Replace(k) }

// options are the loaded configuration plus what only the binary needs.
type options struct {
	broker.Config
	LogLevel string
	// MemoryLimit is memory_limit: the Go runtime's soft limit, 0 for a
	// share of the machine's or container's memory (memory.go).
	MemoryLimit int64
	// GCMinHeap is gc_min_heap: the heap goal's floor (gcfloor.go).
	GCMinHeap int64
	DebugAddr string // host:port for net/http/pprof; "" = none
	AdminAddr string // host:port for metrics, health and status; "" = none

	// LogRateLimit lines of a kind per LogRateInterval (0: no limit); see
	// logging.RateLimiter.
	LogRateLimit    int
	LogRateInterval time.Duration
}

// defaultLogRateLimit lets an operator see a storm's first lines of each
// kind every 10 s; 5,000 partitions' elections wrote 3 million lines in 9
// minutes without it.
const defaultLogRateLimit = 20

// defaultAdminAddr is Redpanda's admin API port, where its users look for
// /metrics, on loopback: the endpoints have no authentication.
const defaultAdminAddr = "127.0.0.1:9644"

// errHelp is returned when --help was asked for; usage is already printed.
var errHelp = errors.New("help requested")

// loadConfig reads, in rising precedence: defaults, the --config YAML
// file, MINIKAFKA_* environment variables, flags. Every value is parsed
// strictly: a bad one is an error naming its key and value.
func loadConfig(args []string, getenv func(string) (string, bool), usage io.Writer) (options, error) {
	v := viper.New()
	fs := pflag.NewFlagSet("minikafka-node", pflag.ContinueOnError)
	fs.SetOutput(usage)
	cfgFile := fs.String("config", "", "YAML configuration file")
	ks := keys()
	for _, k := range ks {
		v.SetDefault(k.name, k.def)
		help := fmt.Sprintf("%s (env MINIKAFKA_%s", k.help, envName(k.name))
		if d := fmt.Sprint(k.def); d != "" && d != "[]" {
			help += ", default " + d
		}
		fs.String(flagName(k.name), "", help+")")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return options{}, errHelp
		}
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *cfgFile != "" {
		v.SetConfigFile(*cfgFile)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return options{}, fmt.Errorf("config file %s: %w", *cfgFile, err)
		}
		known := map[string]bool{listenersKey: true, saslUsersKey: true}
		for _, k := range ks {
			known[k.name] = true
		}
		for _, k := range v.AllKeys() {
			if !known[k] && v.InConfig(k) {
				return options{}, fmt.Errorf("config file %s: unknown key %q", *cfgFile, k)
			}
		}
	}
	explicit := map[string]bool{}
	for _, k := range ks {
		explicit[k.name] = v.InConfig(k.name)
		if val, ok := getenv("MINIKAFKA_" + envName(k.name)); ok {
			v.Set(k.name, val)
			explicit[k.name] = true
		}
		if f := fs.Lookup(flagName(k.name)); f.Changed {
			v.Set(k.name, f.Value.String())
			explicit[k.name] = true
		}
	}
	if v.InConfig(listenersKey) {
		for _, k := range []string{"kafka_addr", "advertised_kafka_addr"} {
			if explicit[k] {
				return options{}, &broker.ConfigError{Key: k, Value: v.Get(k),
					Err: fmt.Errorf("%w: set either %s or listeners, not both", broker.ErrInvalidConfig, k)}
			}
		}
	}
	return fromViper(v)
}

func envName(k string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_").Replace(k))
}

func fromViper(v *viper.Viper) (options, error) {
	g := &getter{v: v}
	rangeInt := func(key string, n, lo, hi int) {
		if n < lo || n > hi {
			g.fail(key, n, fmt.Errorf("must be in %d..%d", lo, hi))
		}
	}
	o := options{}
	c := &o.Config
	nodeID := g.int("node_id")
	rangeInt("node_id", nodeID, 1, 1<<31-1)
	c.NodeID = int32(nodeID)
	c.DataDir = g.string("data_dir")
	networkKeys(g, c)
	c.BootstrapExpect = g.int("bootstrap_expect")
	parts := g.int("default_partitions")
	rangeInt("default_partitions", parts, 1, 1<<20)
	c.DefaultPartitions = int32(parts)
	rf := g.int("default_replication_factor")
	rangeInt("default_replication_factor", rf, 1, 1<<15-1)
	c.DefaultReplicationFactor = int16(rf)
	c.AutoCreateTopics = g.bool("auto_create_topics")
	mp := g.int("max_partitions")
	rangeInt("max_partitions", mp, 1, 1<<31-1)
	c.MaxPartitions = int32(mp)
	mr := g.int("max_partition_replicas_per_node")
	rangeInt("max_partition_replicas_per_node", mr, 0, 1<<31-1)
	c.MaxNodeReplicas = int32(mr)
	internalTopics(g, c, rangeInt)
	c.GroupInitialRebalanceDelay = g.duration("group_initial_rebalance_delay")
	c.GroupMinSessionTimeout = g.duration("group_min_session_timeout")
	c.GroupMaxSessionTimeout = g.duration("group_max_session_timeout")
	c.GroupConsumer = consumerGroupConfig(g)
	c.GroupShare = shareMembershipConfig(g)
	c.ShareGroups = shareGroupConfig(g)
	c.SegmentBytes = g.int64("segment_bytes")
	c.PageCacheKeepBytes = g.int64("log_page_cache_keep_bytes")
	c.PartitionMaxOpenFiles = g.int("partition_max_open_files")
	c.ProducerWindow = g.int("producer_window")
	c.QuotaWindowNum, c.QuotaWindowSizeSeconds = g.int("quota_window_num"), g.int("quota_window_size_seconds")
	mrb := g.int("max_request_bytes")
	rangeInt("max_request_bytes", mrb, 1, 1<<31-1)
	c.MaxRequestBytes = int32(mrb)
	c.QueuedMaxRequestBytes = g.int64("queued_max_request_bytes")
	c.MaxConnections = g.int("max_connections")
	c.MaxConnectionsPerIP = g.int("max_connections_per_ip")
	c.ConnectionsMaxIdle = g.duration("connections_max_idle")
	c.LeaderRebalanceInterval = g.duration("leader_rebalance_interval")
	c.NodeUnavailableTimeout = g.duration("node_unavailable_timeout")
	c.ReplicaMoveThrottle = g.int("replica_move_throttle")
	logKeys(g, c)
	c.PartitionRaft = g.timing("raft")
	c.Storage = g.storage()
	c.MetaRaft = g.timing("meta_raft")
	c.PartitionLogStore = multiraft.LogStore(g.string("raft.log_store"))
	c.Tuning.Raft.SerialLeaderWrite = !g.bool("raft.parallel_leader_write")
	o.LogLevel = g.string("log_level")
	o.LogRateLimit = g.int("log_rate_limit")
	rangeInt("log_rate_limit", o.LogRateLimit, 0, 1<<31-1)
	o.LogRateInterval = g.duration("log_rate_interval")
	if o.LogRateInterval < time.Millisecond {
		g.fail("log_rate_interval", o.LogRateInterval, errors.New("must be at least 1ms"))
	}
	o.DebugAddr = g.hostPort("debug_addr")
	o.AdminAddr = g.hostPort("admin_addr")
	if c.ConsoleAdminKey = g.string("console_admin_key"); c.ConsoleAdminKey != "" && len(c.ConsoleAdminKey) < 16 {
		g.fail("console_admin_key", "(hidden)", errors.New("must be at least 16 characters"))
	}
	if o.MemoryLimit = g.int64("memory_limit"); o.MemoryLimit < 0 {
		g.fail("memory_limit", o.MemoryLimit, errors.New("must not be negative (0: a share of the machine's memory)"))
	}
	o.GCMinHeap = int64(g.uint64("gc_min_heap"))
	if g.err != nil {
		return options{}, g.err
	}
	if err := c.Validate(); err != nil {
		return options{}, err
	}
	return o, nil
}

// logKeys reads the partition logs' retention, cleaning, flush and
// producer-state settings.
func logKeys(g *getter, c *broker.Config) {
	c.RetentionCheckInterval = g.duration("log_retention_check_interval")
	c.CleanerBackoff = g.duration("log_cleaner_backoff")
	c.CleanInternalTopics = g.bool("log_cleaner_internal_topics")
	c.CleanerThreads = g.int("log_cleaner_threads")
	c.CleanerDedupeBufferSize = g.int64("log_cleaner_dedupe_buffer_size")
	c.Tuning.ReplicaLagMax = g.duration("replica_lag_time_max")
	c.LogRetentionMs = g.int64("log_retention_ms")
	c.LogRetentionBytes = g.int64("log_retention_bytes")
	c.MessageMaxBytes = int32(g.int("message_max_bytes"))
	c.WriteCachingDefault = g.bool("write_caching_default")
	c.LogFlushIntervalMs = g.int64("log_flush_interval_ms")
	c.ProducerIDExpirationMs = g.int64("producer_id_expiration_ms")
	c.ProducerExpirationCheckInterval = g.duration("producer_id_expiration_check_interval")
	c.MaxProducers = g.int("max_producers_per_partition")
}

// networkKeys reads the addresses, listeners and security of the node.
func networkKeys(g *getter, c *broker.Config) {
	c.ConnectionFailedAuthenticationDelay = g.duration("connection_failed_authentication_delay")
	c.MaxFailedAuthenticationsPerIP = g.int("max_failed_authentications_per_ip")
	c.FailedAuthenticationsWindow = g.duration("failed_authentications_window")
	c.Security = g.security()
	c.KafkaAddr = g.string("kafka_addr")
	c.AdvertisedKafkaAddr = g.string("advertised_kafka_addr")
	c.RaftAddr = g.string("raft_addr")
	c.AdvertisedRaftAddr = g.string("advertised_raft_addr")
	c.GossipAddr = g.string("gossip_addr")
	c.AdvertisedGossip = g.string("advertised_gossip_addr")
	c.RaftSourceAddr = g.string("raft_source_addr")
	c.GossipSourceAddr = g.string("gossip_source_addr")
	c.Join = g.list("join")
	c.Listeners = g.listeners()
	c.SASLUsers = g.saslUsers()
	c.DelegationTokens = broker.DelegationTokenConfig{SecretKey: g.string("delegation_token_secret_key"),
		MaxLifetimeMs:         g.int64("delegation_token_max_lifetime_ms"),
		ExpiryTimeMs:          g.int64("delegation_token_expiry_time_ms"),
		ExpiryCheckIntervalMs: g.int64("delegation_token_expiry_check_interval_ms")}
	c.AuthorizationEnabled = g.bool("authorization_enabled")
	c.SuperUsers = g.list("super_users")
	c.AllowEveryoneIfNoACLFound = g.bool("allow_everyone_if_no_acl_found")
}

// hostPort reads an optional host:port key ("" when unset).
func (g *getter) hostPort(key string) string {
	s := g.string(key)
	if s != "" {
		if _, _, err := net.SplitHostPort(s); err != nil {
			g.fail(key, s, err)
		}
	}
	return s
}

// internalTopics reads the shapes of the internal topics, the
// transaction coordinator's limits and how long the coordinators keep
// offsets and transactional ids.
func internalTopics(g *getter, c *broker.Config, rangeInt func(key string, n, lo, hi int)) {
	op := g.int("offsets_topic_partitions")
	rangeInt("offsets_topic_partitions", op, 1, 1<<10)
	c.OffsetsTopicPartitions = int32(op)
	orf := g.int("offsets_topic_replication_factor")
	rangeInt("offsets_topic_replication_factor", orf, 1, 1<<15-1)
	c.OffsetsTopicReplicationFactor = int16(orf)
	tp := g.int("transaction_state_partitions")
	rangeInt("transaction_state_partitions", tp, 1, 1<<10)
	c.TxnTopicPartitions = int32(tp)
	trf := g.int("transaction_state_replication_factor")
	rangeInt("transaction_state_replication_factor", trf, 1, 1<<15-1)
	c.TxnTopicReplicationFactor = int16(trf)
	c.TxnMaxTimeout = g.duration("transaction_max_timeout")
	c.TxnAbortInterval = g.duration("transaction_abort_interval")
	c.TxnPartitionVerification = g.bool("transaction_partition_verification")
	c.TxnPendingOffsetsCheckInterval = g.duration("transaction_pending_offsets_check_interval")
	orm := g.int("offsets_retention_minutes")
	rangeInt("offsets_retention_minutes", orm, 1, 1<<31-1)
	c.OffsetsRetention = time.Duration(orm) * time.Minute
	c.OffsetsRetentionCheckInterval = g.duration("offsets_retention_check_interval")
	c.TransactionalIDExpirationMs = g.int64("transactional_id_expiration_ms")
	c.TxnRemoveExpiredInterval = g.duration("transaction_remove_expired_interval")
}

// consumerGroupKeys are the KIP-848 consumer group keys (Kafka's
// group.consumer.*).
func consumerGroupKeys() []key {
	return []key{
		{"group_consumer_session_timeout", groupcoord.DefaultConsumerSessionTimeout, "session timeout of KIP-848 consumer group members (group.consumer.session.timeout.ms)"},
		{"group_consumer_min_session_timeout", groupcoord.DefaultConsumerMinSessionTimeout, "lowest group_consumer_session_timeout allowed (group.consumer.min.session.timeout.ms)"},
		{"group_consumer_max_session_timeout", groupcoord.DefaultConsumerMaxSessionTimeout, "highest group_consumer_session_timeout allowed (group.consumer.max.session.timeout.ms)"},
		{"group_consumer_heartbeat_interval", groupcoord.DefaultConsumerHeartbeatInterval, "heartbeat interval given to consumer group members (group.consumer.heartbeat.interval.ms)"},
		{"group_consumer_min_heartbeat_interval", groupcoord.DefaultConsumerMinHeartbeatInterval, "lowest group_consumer_heartbeat_interval allowed (group.consumer.min.heartbeat.interval.ms)"},
		{"group_consumer_max_heartbeat_interval", groupcoord.DefaultConsumerMaxHeartbeatInterval, "highest group_consumer_heartbeat_interval allowed (group.consumer.max.heartbeat.interval.ms)"},
		{"group_consumer_max_size", groupcoord.DefaultConsumerMaxSize, "most members of a consumer group (group.consumer.max.size)"},
		{"group_consumer_assignors", groupcoord.DefaultConsumerAssignors, "server-side assignors of consumer groups, the first the default: uniform, range (group.consumer.assignors)"},
		{"group_consumer_migration_policy", groupcoord.MigrationBidirectional, "group.consumer.migration.policy: bidirectional, upgrade, downgrade or disabled"},
	}
}

// consumerGroupConfig reads consumerGroupKeys.
func consumerGroupConfig(g *getter) groupcoord.ConsumerConfig {
	return groupcoord.ConsumerConfig{
		SessionTimeout: g.duration("group_consumer_session_timeout"), MinSessionTimeout: g.duration("group_consumer_min_session_timeout"),
		MaxSessionTimeout: g.duration("group_consumer_max_session_timeout"), HeartbeatInterval: g.duration("group_consumer_heartbeat_interval"),
		MinHeartbeatInterval: g.duration("group_consumer_min_heartbeat_interval"), MaxHeartbeatInterval: g.duration("group_consumer_max_heartbeat_interval"),
		MaxSize: g.int("group_consumer_max_size"), Assignors: g.list("group_consumer_assignors"),
		MigrationPolicy: g.string("group_consumer_migration_policy"),
	}
}

// quotaKeys are the client quotas' window (Kafka's quota.window.*).
func quotaKeys(d broker.Config) []key {
	return []key{
		{"quota_window_num", d.QuotaWindowNum, "windows over which client quotas measure a rate (quota.window.num); 2..100"},
		{"quota_window_size_seconds", d.QuotaWindowSizeSeconds, "length of one client quota window in seconds (quota.window.size.seconds); 1..3600"},
	}
}
