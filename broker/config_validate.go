package broker

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/multiraft"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// ConfigError names the configuration key that is wrong and why.
type ConfigError struct {
	Key   string
	Value any
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config %s=%v: %v", e.Key, e.Value, e.Err)
}
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrInvalidConfig is wrapped by every *ConfigError.
var ErrInvalidConfig = errors.New("invalid value")

func bad(key string, v any, format string, args ...any) error {
	return &ConfigError{Key: key, Value: v, Err: fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))}
}

// Validate checks every field and fills advertised addresses from the bind
// addresses. It returns the first problem as a *ConfigError naming the
// key as it is spelled in the YAML file.
func (c *Config) Validate() error {
	if c.NodeID <= 0 {
		return bad("node_id", c.NodeID, "must be a positive integer")
	}
	if c.DataDir == "" {
		return bad("data_dir", c.DataDir, "must be set")
	}
	for _, check := range []func() error{c.validateAddrs, c.validateListeners, c.validateSecurity, c.validateTopics, c.validateGroups, c.validateLimits, c.validateAuthz, c.validateRaftAuth, c.validateAuthLimits, c.validateDelegationTokens, c.validateShareGroups} {
		if err := check(); err != nil {
			return err
		}
	}
	if err := c.PartitionRaft.Validate(); err != nil {
		return bad("raft", "", "%v", err)
	}
	if _, err := multiraft.ParseLogStore(string(c.PartitionLogStore)); err != nil {
		return bad("raft.log_store", c.PartitionLogStore, "must be %q, %q or %q",
			multiraft.LogStoreBoltDB, multiraft.LogStoreWAL, multiraft.LogStorePebble)
	}
	if err := c.MetaRaft.Validate(); err != nil {
		return bad("meta_raft", "", "%v", err)
	}
	if err := c.Storage.validate(); err != nil {
		return err
	}
	if c.LeaderRebalanceInterval < 0 {
		return bad("leader_rebalance_interval", c.LeaderRebalanceInterval, "must not be negative")
	}
	if c.NodeUnavailableTimeout < 0 {
		return bad("node_unavailable_timeout", c.NodeUnavailableTimeout, "must not be negative")
	}
	switch {
	case c.ReplicaMoveThrottle < 0 || c.ReplicaMoveThrottle > 0 && c.ReplicaMoveThrottle < 64<<10:
		return bad("replica_move_throttle", c.ReplicaMoveThrottle, "must be 0 (no bound) or at least 65536 bytes per second")
	case c.ReplicaMoveThrottle == 0:
		c.Tuning.Raft.CatchUpRate = -1 // unbounded
	default:
		c.Tuning.Raft.CatchUpRate = c.ReplicaMoveThrottle
	}
	c.Tuning.Raft.RebalanceInterval = c.LeaderRebalanceInterval
	if c.LeaderRebalanceInterval == 0 {
		c.Tuning.Raft.RebalanceInterval = -1 // off
	}
	return c.Tuning.validate()
}

// validateAddrs checks the addresses, filling the advertised ones from
// the bind addresses, and the gossip seeds.
func (c *Config) validateAddrs() error {
	for _, a := range []struct {
		key  string
		addr *string
		adv  *string
	}{
		{"kafka_addr", &c.KafkaAddr, &c.AdvertisedKafkaAddr},
		{"raft_addr", &c.RaftAddr, &c.AdvertisedRaftAddr},
		{"gossip_addr", &c.GossipAddr, &c.AdvertisedGossip},
	} {
		if err := checkHostPort(a.key, *a.addr, true); err != nil {
			return err
		}
		if *a.adv == "" {
			host, _, _ := net.SplitHostPort(*a.addr)
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				return bad("advertised_"+a.key, "", "must be set when %s binds all interfaces (%s)", a.key, *a.addr)
			}
			*a.adv = *a.addr
		} else if err := checkHostPort("advertised_"+a.key, *a.adv, false); err != nil {
			return err
		}
	}
	for _, a := range []struct{ key, ip string }{{"raft_source_addr", c.RaftSourceAddr}, {"gossip_source_addr", c.GossipSourceAddr}} {
		if _, err := netip.ParseAddr(a.ip); a.ip != "" && err != nil {
			return bad(a.key, a.ip, "must be an IP address without a port")
		}
	}
	for _, j := range c.Join {
		if err := checkHostPort("join", j, false); err != nil {
			return err
		}
	}
	if c.BootstrapExpect < 1 {
		return bad("bootstrap_expect", c.BootstrapExpect, "must be at least 1")
	}
	if c.BootstrapExpect > 1 && len(c.Join) == 0 {
		return bad("join", "[]", "must list gossip seeds when bootstrap_expect is %d", c.BootstrapExpect)
	}
	return nil
}

// validateTopics checks the shapes of new topics and of the cluster's.
func (c *Config) validateTopics() error {
	switch {
	case c.DefaultPartitions < 1:
		return bad("default_partitions", c.DefaultPartitions, "must be at least 1")
	case c.MaxPartitions < 1:
		return bad("max_partitions", c.MaxPartitions, "must be at least 1")
	case c.MaxNodeReplicas < 0:
		return bad("max_partition_replicas_per_node", c.MaxNodeReplicas, "must not be negative (0: no bound)")
	case c.OffsetsTopicPartitions < 1 || c.OffsetsTopicPartitions > 1024:
		return bad("offsets_topic_partitions", c.OffsetsTopicPartitions, "must be in 1..1024")
	case c.OffsetsTopicReplicationFactor < 1:
		return bad("offsets_topic_replication_factor", c.OffsetsTopicReplicationFactor, "must be at least 1")
	case c.TxnTopicPartitions < 1 || c.TxnTopicPartitions > 1024:
		return bad("transaction_state_partitions", c.TxnTopicPartitions, "must be in 1..1024")
	case c.TxnTopicReplicationFactor < 1:
		return bad("transaction_state_replication_factor", c.TxnTopicReplicationFactor, "must be at least 1")
	case c.TxnMaxTimeout <= 0 || c.TxnAbortInterval <= 0:
		return bad("transaction_max_timeout", c.TxnMaxTimeout, "and the abort interval must be positive")
	case c.TxnPendingOffsetsCheckInterval <= 0:
		return bad("transaction_pending_offsets_check_interval", c.TxnPendingOffsetsCheckInterval, "must be positive")
	case c.DefaultReplicationFactor < 1:
		return bad("default_replication_factor", c.DefaultReplicationFactor, "must be at least 1")
	}
	return nil
}

// validateLimits checks the storage and client limits.
func (c *Config) validateLimits() error {
	switch {
	case c.SegmentBytes < topicconfig.MinSegmentBytes:
		return bad("segment_bytes", c.SegmentBytes, "must be at least 1 MiB")
	case c.PageCacheKeepBytes < -1 || c.PageCacheKeepBytes == 0:
		return bad("log_page_cache_keep_bytes", c.PageCacheKeepBytes, "must be -1 (never drop) or positive")
	case c.ProducerWindow < 1 || c.ProducerWindow > 1000:
		return bad("producer_window", c.ProducerWindow, "must be in 1..1000")
	case c.QuotaWindowNum < 2 || c.QuotaWindowNum > 100:
		return bad("quota_window_num", c.QuotaWindowNum, "must be in 2..100 (windows kept per client and quota)")
	case c.QuotaWindowSizeSeconds < 1 || c.QuotaWindowSizeSeconds > 3600:
		return bad("quota_window_size_seconds", c.QuotaWindowSizeSeconds, "must be in 1..3600")
	case c.MaxRequestBytes < 1<<20:
		return bad("max_request_bytes", c.MaxRequestBytes, "must be at least 1 MiB")
	case c.QueuedMaxRequestBytes < 2*int64(c.MaxRequestBytes):
		return bad("queued_max_request_bytes", c.QueuedMaxRequestBytes, "must be at least twice max_request_bytes (%d)", c.MaxRequestBytes)
	case c.MaxConnections < 1:
		return bad("max_connections", c.MaxConnections, "must be at least 1")
	case c.MaxConnectionsPerIP < 1:
		return bad("max_connections_per_ip", c.MaxConnectionsPerIP, "must be at least 1")
	case c.ConnectionsMaxIdle < time.Millisecond:
		return bad("connections_max_idle", c.ConnectionsMaxIdle, "must be at least 1ms")
	case c.RetentionCheckInterval < time.Millisecond:
		return bad("log_retention_check_interval", c.RetentionCheckInterval, "must be at least 1ms")
	case c.ProducerExpirationCheckInterval < time.Millisecond:
		return bad("producer_id_expiration_check_interval", c.ProducerExpirationCheckInterval, "must be at least 1ms")
	case c.LogRetentionMs < -1:
		return bad("log_retention_ms", c.LogRetentionMs, "must be -1 (forever) or more")
	case c.LogRetentionBytes < -1:
		return bad("log_retention_bytes", c.LogRetentionBytes, "must be -1 (no limit) or more")
	case c.MessageMaxBytes < 0 || c.MessageMaxBytes > c.MaxRequestBytes:
		return bad("message_max_bytes", c.MessageMaxBytes, "must be in 0..max_request_bytes (%d)", c.MaxRequestBytes)
	case c.LogFlushIntervalMs < 0:
		return bad("log_flush_interval_ms", c.LogFlushIntervalMs, "must be 0 (fsync before acknowledging) or more")
	case c.ProducerIDExpirationMs < 1:
		return bad("producer_id_expiration_ms", c.ProducerIDExpirationMs, "must be at least 1")
	case c.MaxProducers < 1:
		return bad("max_producers_per_partition", c.MaxProducers, "must be at least 1")
	case c.PartitionMaxOpenFiles != 0 && c.PartitionMaxOpenFiles < 16:
		return bad("partition_max_open_files", c.PartitionMaxOpenFiles, "must be 0 (no bound) or at least 16")
	case c.CleanerThreads < 1 || c.CleanerThreads > 64:
		return bad("log_cleaner_threads", c.CleanerThreads, "must be in 1..64")
	case c.CleanerDedupeBufferSize < 64<<10:
		return bad("log_cleaner_dedupe_buffer_size", c.CleanerDedupeBufferSize, "must be at least 64 KiB")
	case c.CleanerBackoff < time.Millisecond:
		return bad("log_cleaner_backoff", c.CleanerBackoff, "must be at least 1ms")
	}
	return nil
}

// validateGroups checks the settings of the group coordinators.
func (c *Config) validateGroups() error {
	switch {
	case c.GroupInitialRebalanceDelay < 0:
		return bad("group_initial_rebalance_delay", c.GroupInitialRebalanceDelay, "must not be negative")
	case c.GroupMinSessionTimeout < time.Millisecond:
		return bad("group_min_session_timeout", c.GroupMinSessionTimeout, "must be at least 1ms")
	case c.GroupMaxSessionTimeout < c.GroupMinSessionTimeout:
		return bad("group_max_session_timeout", c.GroupMaxSessionTimeout, "must not be below group_min_session_timeout (%v)", c.GroupMinSessionTimeout)
	}
	if _, err := c.GroupConsumer.WithDefaults(); err != nil {
		return consumerConfigError(err)
	}
	if _, err := c.GroupShare.WithDefaults(); err != nil {
		return consumerConfigError(err)
	}
	return c.validateExpiry()
}

// validateExpiry checks how long committed offsets and transactional ids
// are kept and how often they are looked at.
func (c *Config) validateExpiry() error {
	switch {
	case c.OffsetsRetention < time.Millisecond:
		return bad("offsets_retention_minutes", c.OffsetsRetention, "must be positive")
	case c.OffsetsRetentionCheckInterval < time.Millisecond:
		return bad("offsets_retention_check_interval", c.OffsetsRetentionCheckInterval, "must be at least 1ms")
	case c.TransactionalIDExpirationMs < 1 || c.TransactionalIDExpirationMs > math.MaxInt32:
		return bad("transactional_id_expiration_ms", c.TransactionalIDExpirationMs, "must be in 1..%d", math.MaxInt32)
	case c.TxnRemoveExpiredInterval < time.Millisecond:
		return bad("transaction_remove_expired_interval", c.TxnRemoveExpiredInterval, "must be at least 1ms")
	}
	return nil
}

func checkHostPort(key, v string, allowZeroPort bool) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return bad(key, v, "want host:port")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 || (p == 0 && !allowZeroPort) {
		return bad(key, v, "port must be a number in 1..65535")
	}
	_ = host
	return nil
}

// validateAuthz checks super_users: each "User:<name>".
func (c *Config) validateAuthz() error {
	for i, p := range c.SuperUsers {
		if name, ok := strings.CutPrefix(p, acl.UserPrefix); !ok || name == "" || strings.Contains(p, ";") {
			return bad(fmt.Sprintf("super_users[%d]", i), p, "must be User:<name>")
		}
	}
	return nil
}

// consumerConfigError names the group_consumer_* (or group_share_*) key
// of a groupcoord.ConsumerConfig (ShareConfig) error (field
// "Consumer.MinSessionTimeout" is key group_consumer_min_session_timeout).
func consumerConfigError(err error) error {
	key := "group_consumer"
	if ce, ok := errors.AsType[*groupcoord.ConfigError](err); ok {
		field, share := strings.CutPrefix(ce.Field, "Share.")
		if share {
			key = "group_share"
		}
		field = strings.TrimPrefix(field, "Consumer.")
		var b strings.Builder
		for i, r := range field {
			if unicode.IsUpper(r) && i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
		}
		key += "_" + b.String()
		err = errors.New(ce.Reason)
	}
	return &ConfigError{Key: key, Err: fmt.Errorf("%w: %w", ErrInvalidConfig, err)}
}
