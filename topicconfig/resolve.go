package topicconfig

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Validate checks one topic config: a known name and a valid value.
// Errors are *Error and wrap kerr.InvalidConfig.
func Validate(name, value string) error {
	s, ok := Lookup(name)
	if !ok {
		return unknownTopicConfig(name)
	}
	if reason, ok := s.valid(value); !ok {
		return &Error{Name: name, Value: value, Reason: reason}
	}
	return nil
}

// ValidateAll checks a topic's overrides, in name order so that the error
// reported is always the same one.
func ValidateAll(m map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := Validate(k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

// ValidateBroker checks one cluster-wide dynamic default: a broker
// synonym of a topic config (log.retention.ms, log.retention.hours,
// message.max.bytes, ...), or producer.id.expiration.ms or
// transactional.id.expiration.ms. Errors wrap kerr.InvalidConfig.
func ValidateBroker(name, value string) error {
	if b, ok := brokerOnly[name]; ok {
		if reason, ok := b.valid(value); !ok {
			return &Error{Name: name, Value: value, Reason: reason}
		}
		return nil
	}
	s, _, known := brokerSpec(name)
	if !known {
		return unknownBrokerConfig(name)
	}
	if _, reason := brokerReason(s, name, value); reason != "" {
		return &Error{Name: name, Value: value, Reason: reason}
	}
	return nil
}

// BrokerConfigType is the type of a broker config ValidateBroker accepts.
func BrokerConfigType(name string) (kmsg.ConfigType, bool) {
	if _, ok := brokerOnly[name]; ok {
		if name == TransactionalIDExpiration {
			return kmsg.ConfigTypeInt, true
		}
		return kmsg.ConfigTypeLong, true
	}
	s, factor, ok := brokerSpec(name)
	if ok && factor != 1 {
		return kmsg.ConfigTypeInt, true
	}
	return s.Type, ok
}

// ValidateBrokerAll checks cluster-wide defaults in name order.
func ValidateBrokerAll(m map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := ValidateBroker(k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

// brokerValue converts a broker synonym's value to its topic config's
// unit and checks it; ok is false for an unknown name or a bad value.
func brokerValue(name, value string) (Spec, string, bool) {
	s, _, known := brokerSpec(name)
	if !known {
		return Spec{}, "", false
	}
	v, reason := brokerReason(s, name, value)
	return s, v, reason == ""
}

// brokerReason converts and checks; reason is "" when value is valid.
func brokerReason(s Spec, name, value string) (converted, reason string) {
	_, factor, _ := brokerSpec(name)
	if factor != 1 {
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return "", "Not a number of type INT"
		}
		ms, ok := checkedMul(n, factor)
		if !ok {
			return "", "Value out of range"
		}
		if _, ok := s.valid("-1"); ms < 0 && ok {
			ms = -1 // Kafka: a negative retention in any unit is forever
		}
		value = strconv.FormatInt(ms, 10)
	}
	if reason, ok := s.valid(value); !ok {
		return "", reason
	}
	return value, ""
}

// Synonym is one source of a topic config's value, as DescribeConfigs
// reports it: the name it is set under there, the value as set (in that
// name's unit), and the source.
type Synonym struct {
	Name   string
	Value  string
	Source kmsg.ConfigSource
}

// Describe returns a topic config's value (in the topic config's unit)
// and the synonyms it may come from, in precedence order: the first one
// gives the value. Invalid values are skipped. ok is false for an
// unknown name.
func Describe(name string, topic, clusterDefaults, static map[string]string) (value string, synonyms []Synonym, ok bool) {
	s, ok := Lookup(name)
	if !ok {
		return "", nil, false
	}
	value = s.Default
	found := false
	add := func(syn Synonym, converted string) {
		synonyms = append(synonyms, syn)
		if !found {
			value, found = converted, true
		}
	}
	if v, set := topic[name]; set && Validate(name, v) == nil {
		add(Synonym{name, v, kmsg.ConfigSourceDynamicTopicConfig}, v)
	}
	brokerNames := s.brokerNames()
	for _, level := range []struct {
		m   map[string]string
		src kmsg.ConfigSource
	}{{clusterDefaults, kmsg.ConfigSourceDynamicDefaultBrokerConfig}, {static, kmsg.ConfigSourceStaticBrokerConfig}} {
		for _, bn := range brokerNames {
			if v, set := level.m[bn]; set {
				if _, conv, valid := brokerValue(bn, v); valid {
					add(Synonym{bn, v, level.src}, conv)
				}
			}
		}
	}
	if s.Broker != "" {
		synonyms = append(synonyms, Synonym{s.Broker, s.Default, kmsg.ConfigSourceDefaultConfig})
	}
	return value, synonyms, true
}

// brokerNames are the broker synonyms of s, finest unit first.
func (s Spec) brokerNames() []string {
	if s.Broker == "" {
		return nil
	}
	names := []string{s.Broker}
	for _, u := range s.units {
		names = append(names, u.name)
	}
	return names
}

// Config is a topic's resolved, typed configs that the broker acts on.
type Config struct {
	CleanupPolicy   []string // delete and/or compact
	RetentionMs     int64    // -1 forever
	RetentionBytes  int64    // -1 unlimited
	SegmentBytes    int64
	SegmentMs       int64
	MaxMessageBytes int32
	LogAppendTime   bool // message.timestamp.type=LogAppendTime
	WriteCaching    bool // write.caching
	FlushMs         int64
	// Compaction (cleanup.policy=compact): delete.retention.ms,
	// min.compaction.lag.ms, max.compaction.lag.ms,
	// min.cleanable.dirty.ratio.
	DeleteRetentionMs      int64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
	MinCleanableDirtyRatio float64
}

// DefaultWriteCachingFlushMs bounds the fsync delay of a partition in
// write-caching mode when flush.ms says "never" (Redpanda's default).
const DefaultWriteCachingFlushMs = 100

// maxFlushMs is the longest flush.ms a time.Duration holds (about 292
// years); longer values, Kafka's default Long.MAX among them, mean never.
const maxFlushMs = math.MaxInt64 / int64(time.Millisecond)

// WriteCachingFlush is what a replica's Raft group is given
// (multiraft.Group.SetWriteCaching): 0 without write caching, that is
// fsync before acknowledging; else flush.ms, where "never" becomes
// DefaultWriteCachingFlushMs so that the fsync delay is always bounded.
func (c Config) WriteCachingFlush() time.Duration {
	switch {
	case !c.WriteCaching || c.FlushMs <= 0:
		return 0
	case c.FlushMs > maxFlushMs:
		return DefaultWriteCachingFlushMs * time.Millisecond
	}
	return time.Duration(c.FlushMs) * time.Millisecond
}

// Resolve gives a topic's Config from its overrides, the cluster-wide
// dynamic defaults and the node's static broker configs (see the package
// doc for the precedence). Any map may be nil.
func Resolve(topic, clusterDefaults, static map[string]string) Config {
	get := func(name string) string {
		v, _, _ := Describe(name, topic, clusterDefaults, static)
		return v
	}
	long := func(name string) int64 {
		n, err := parseLong(get(name))
		if err != nil { // unreachable: Describe returns only valid values
			s, _ := Lookup(name)
			n, _ = parseLong(s.Default)
		}
		return n
	}
	return Config{
		CleanupPolicy:          splitList(get("cleanup.policy")),
		RetentionMs:            long("retention.ms"),
		RetentionBytes:         long("retention.bytes"),
		SegmentBytes:           long("segment.bytes"),
		SegmentMs:              long("segment.ms"),
		MaxMessageBytes:        int32(long("max.message.bytes")),
		LogAppendTime:          get("message.timestamp.type") == "LogAppendTime",
		WriteCaching:           strings.EqualFold(strings.TrimSpace(get("write.caching")), "true"),
		FlushMs:                long("flush.ms"),
		DeleteRetentionMs:      long("delete.retention.ms"),
		MinCompactionLagMs:     long("min.compaction.lag.ms"),
		MaxCompactionLagMs:     long("max.compaction.lag.ms"),
		MinCleanableDirtyRatio: parseRatio(get("min.cleanable.dirty.ratio")),
	}
}

// ProducerIDExpirationMs is producer.id.expiration.ms: how long an idle
// producer id's state is kept. The dynamic cluster default wins over the
// node's static value, which wins over Kafka's default (86400000).
func ProducerIDExpirationMs(clusterDefaults, static map[string]string) int64 {
	return brokerOnlyLong(ProducerIDExpiration, clusterDefaults, static)
}

// TransactionalIDExpirationMs is transactional.id.expiration.ms, resolved
// like ProducerIDExpirationMs (Kafka's default 604800000).
func TransactionalIDExpirationMs(clusterDefaults, static map[string]string) int64 {
	return brokerOnlyLong(TransactionalIDExpiration, clusterDefaults, static)
}

func brokerOnlyLong(name string, levels ...map[string]string) int64 {
	b := brokerOnly[name]
	for _, m := range levels {
		if v, ok := m[name]; ok {
			if n, err := parseLong(v); err == nil {
				if _, valid := b.valid(v); valid {
					return n
				}
			}
		}
	}
	return b.dflt
}

// IsUnknown reports whether err is an unknown config name (as opposed to
// a bad value).
func IsUnknown(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Unknown
}

// parseRatio parses a validated double; 0.5 (Kafka's min.cleanable.dirty.ratio
// default) if it does not parse, which Describe's validation prevents.
func parseRatio(v string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0.5
	}
	return f
}
