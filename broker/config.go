package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/minikafka/minikafka-go/raftgroup"
)

// Config is everything a node needs to start. cmd/node fills it from a
// YAML file, MINIKAFKA_* environment variables and flags; tests fill it
// directly.
type Config struct {
	NodeID  int32  // Kafka broker id and Raft server id; > 0
	DataDir string // holds meta/ and partitions/

	KafkaAddr           string // host:port the Kafka listener binds
	AdvertisedKafkaAddr string // host:port clients are told; default KafkaAddr
	RaftAddr            string // host:port for every Raft group and internal RPC
	AdvertisedRaftAddr  string
	GossipAddr          string // host:port for memberlist
	AdvertisedGossip    string
	Join                []string // gossip seeds (host:port); may include this node

	// BootstrapExpect is the number of nodes to wait for before the
	// metadata group is created; the first BootstrapExpect node ids seen are
	// its voters.
	BootstrapExpect int

	DefaultPartitions        int32
	DefaultReplicationFactor int16
	AutoCreateTopics         bool

	// PartitionRaft and MetaRaft are the Raft timings of partition groups
	// and of the metadata group.
	PartitionRaft raftgroup.Timing
	MetaRaft      raftgroup.Timing

	SegmentBytes    int64 // partition log segment size
	ProducerWindow  int   // batches remembered per producer (Kafka: 5)
	MaxRequestBytes int32 // largest Kafka request frame accepted

	// LeaderRebalanceInterval is how often a node hands partitions it leads
	// back to their preferred leader (the first replica). 0 disables it.
	LeaderRebalanceInterval time.Duration

	Logger *slog.Logger
}

// DefaultConfig is a single node on the loopback ports of configs/single.yaml.
func DefaultConfig() Config {
	partitionRaft := raftgroup.DefaultTiming()
	// A partition leader also sends each follower an AppendEntries every
	// commit timeout so that it learns the commit index when writes stop;
	// with hundreds of groups that traffic costs real CPU while idle. Our
	// followers serve no reads and a new leader commits a no-op at once, so
	// they can learn it late.
	partitionRaft.CommitTimeout = time.Second
	return Config{
		NodeID:                   1,
		DataDir:                  "./data/single",
		KafkaAddr:                "127.0.0.1:9092",
		RaftAddr:                 "127.0.0.1:9192",
		GossipAddr:               "127.0.0.1:9292",
		BootstrapExpect:          1,
		DefaultPartitions:        1,
		DefaultReplicationFactor: 1,
		AutoCreateTopics:         true,
		PartitionRaft:            partitionRaft,
		MetaRaft:                 raftgroup.DefaultTiming(),
		SegmentBytes:             128 << 20,
		ProducerWindow:           5,
		MaxRequestBytes:          100 << 20,
		LeaderRebalanceInterval:  10 * time.Second,
	}
}

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
	if c.DefaultPartitions < 1 {
		return bad("default_partitions", c.DefaultPartitions, "must be at least 1")
	}
	if c.DefaultReplicationFactor < 1 {
		return bad("default_replication_factor", c.DefaultReplicationFactor, "must be at least 1")
	}
	if err := c.PartitionRaft.Validate(); err != nil {
		return bad("raft", "", "%v", err)
	}
	if err := c.MetaRaft.Validate(); err != nil {
		return bad("meta_raft", "", "%v", err)
	}
	if c.SegmentBytes < 1<<20 {
		return bad("segment_bytes", c.SegmentBytes, "must be at least 1 MiB")
	}
	if c.ProducerWindow < 1 || c.ProducerWindow > 1000 {
		return bad("producer_window", c.ProducerWindow, "must be in 1..1000")
	}
	if c.MaxRequestBytes < 1<<20 {
		return bad("max_request_bytes", c.MaxRequestBytes, "must be at least 1 MiB")
	}
	if c.LeaderRebalanceInterval < 0 {
		return bad("leader_rebalance_interval", c.LeaderRebalanceInterval, "must not be negative")
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
