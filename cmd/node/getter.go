package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/viper"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/multiraft"
)

// getter parses keys strictly and keeps the first error.
type getter struct {
	v   *viper.Viper
	err error
}

func (g *getter) fail(key string, val any, err error) {
	if g.err == nil {
		g.err = &broker.ConfigError{Key: key, Value: val, Err: fmt.Errorf("%w: %v", broker.ErrInvalidConfig, err)}
	}
}

func (g *getter) int(key string) int { return int(g.int64(key)) }

// int64 parses decimal strings itself: cast would read "010" as octal.
func (g *getter) int64(key string) int64 {
	val := g.v.Get(key)
	var n int64
	var err error
	if s, ok := val.(string); ok {
		n, err = strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	} else {
		n, err = cast.ToInt64E(val)
	}
	if err != nil {
		g.fail(key, val, errors.New("not an integer"))
	}
	return n
}

func (g *getter) uint64(key string) uint64 {
	n := g.int64(key)
	if n < 0 {
		g.fail(key, n, errors.New("must not be negative"))
	}
	return uint64(n)
}

func (g *getter) float64(key string) float64 {
	val := g.v.Get(key)
	f, err := cast.ToFloat64E(val)
	if err != nil {
		g.fail(key, val, errors.New("not a number"))
	}
	return f
}

func (g *getter) bool(key string) bool {
	val := g.v.Get(key)
	b, err := cast.ToBoolE(val)
	if err != nil {
		g.fail(key, val, errors.New("not true or false"))
	}
	return b
}

func (g *getter) duration(key string) time.Duration {
	val := g.v.Get(key)
	if s, ok := val.(string); ok {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			g.fail(key, val, errors.New("not a duration such as 500ms or 2s"))
		}
		return d
	}
	d, err := cast.ToDurationE(val)
	if err != nil {
		g.fail(key, val, errors.New("not a duration such as 500ms or 2s"))
	}
	return d
}

func (g *getter) string(key string) string {
	val := g.v.Get(key)
	s, err := cast.ToStringE(val)
	if err != nil {
		g.fail(key, val, errors.New("not a string"))
	}
	return strings.TrimSpace(s)
}

func (g *getter) list(key string) []string {
	val := g.v.Get(key)
	var items []string
	switch x := val.(type) {
	case string:
		items = strings.Split(x, ",")
	default:
		s, err := cast.ToStringSliceE(val)
		if err != nil {
			g.fail(key, val, errors.New("not a list"))
		}
		items = s
	}
	out := []string{}
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (g *getter) timing(prefix string) multiraft.Timing {
	return multiraft.Timing{
		HeartbeatTimeout:   g.duration(prefix + ".heartbeat_timeout"),
		ElectionTimeout:    g.duration(prefix + ".election_timeout"),
		LeaderLeaseTimeout: g.duration(prefix + ".leader_lease_timeout"),
		CommitTimeout:      g.duration(prefix + ".commit_timeout"),
		MaxAppendEntries:   g.int(prefix + ".max_append_entries"),
		MaxInflightAppends: g.int(prefix + ".max_inflight_appends"),
		SnapshotInterval:   g.duration(prefix + ".snapshot_interval"),
		SnapshotThreshold:  g.uint64(prefix + ".snapshot_threshold"),
		TrailingLogs:       g.uint64(prefix + ".trailing_logs"),
		SnapshotBytes:      g.int64(prefix + ".snapshot_bytes"),
		TrailingBytes:      g.int64(prefix + ".trailing_bytes"),

		LeaderHeartbeatTimeout: g.duration(prefix + ".leader_heartbeat_timeout"),
	}
}

// security reads the keys of broker.SecurityConfig.
func (g *getter) security() broker.SecurityConfig {
	return broker.SecurityConfig{
		RaftTLSCertFile:          g.string("raft_tls_cert_file"),
		RaftTLSKeyFile:           g.string("raft_tls_key_file"),
		RaftTLSCAFile:            g.string("raft_tls_ca_file"),
		GossipKeys:               g.list("gossip_keys"),
		ClusterLabel:             g.string("cluster_label"),
		InterBrokerListener:      g.string("inter_broker_listener"),
		InterBrokerSASLMechanism: strings.ToUpper(g.string("inter_broker_sasl_mechanism")),
		InterBrokerSASLUser:      g.string("inter_broker_sasl_user"),
		InterBrokerSASLPassword:  g.string("inter_broker_sasl_password"),
		InterBrokerTLSCAFile:     g.string("inter_broker_tls_ca_file"),
		RaftAllowUnauthenticated: g.bool("raft_allow_unauthenticated"),
	}
}

// storage reads the keys of broker.StorageConfig.
func (g *getter) storage() broker.StorageConfig {
	return broker.StorageConfig{
		MinFreeBytes:     g.int64("storage_min_free_bytes"),
		MinFreePercent:   g.float64("storage_min_free_percent"),
		AlertFreeBytes:   g.int64("storage_space_alert_free_threshold_bytes"),
		AlertFreePercent: g.float64("storage_space_alert_free_threshold_percent"),
	}
}
