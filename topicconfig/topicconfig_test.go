package topicconfig

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestSpecsSortedAndValidDefaults(t *testing.T) {
	if !slices.IsSortedFunc(specs, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("specs not sorted by name")
	}
	for _, s := range specs {
		if s.Default == "" && s.Type == kmsg.ConfigTypeList {
			continue // an empty throttled replica list
		}
		if err := Validate(s.Name, s.Default); err != nil {
			t.Errorf("Kafka's default of %s fails: %v", s.Name, err)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name, value string
		ok          bool
		reason      string // part of the message, when !ok
	}{
		{"retention.ms", "-1", true, ""},
		{"retention.ms", "86400000", true, ""},
		{"retention.ms", "-2", false, "Value must be at least -1"},
		{"retention.ms", "1d", false, "Not a number of type LONG"},
		{"retention.bytes", "-1", true, ""},
		{"retention.bytes", "-5", false, "at least -1"},
		{"segment.bytes", "1048576", true, ""},
		{"segment.bytes", "1048575", false, "at least 1048576"},
		{"segment.bytes", "4294967296", false, "Not a number of type INT"},
		{"segment.ms", "1", true, ""},
		{"segment.ms", "0", false, "at least 1"},
		{"max.message.bytes", "0", true, ""},
		{"max.message.bytes", "-1", false, "at least 0"},
		{"cleanup.policy", "delete", true, ""},
		{"cleanup.policy", "compact,delete", true, ""},
		{"cleanup.policy", "compact, delete", true, ""},
		{"cleanup.policy", "", false, "Empty list"},
		{"cleanup.policy", "shred", false, "shred"},
		{"message.timestamp.type", "LogAppendTime", true, ""},
		{"message.timestamp.type", "logappendtime", false, "CreateTime, LogAppendTime"},
		{"min.insync.replicas", "2", true, ""},
		{"min.insync.replicas", "0", false, "at least 1"},
		{"min.cleanable.dirty.ratio", "0.1", true, ""},
		{"min.cleanable.dirty.ratio", "1.5", false, "[0, 1]"},
		{"preallocate", "TRUE", true, ""},
		{"preallocate", "yes", false, "true or false"},
		{"remote.storage.enable", "true", false, "Tiered Storage"},
		{"compression.type", "zstd", true, ""},
		{"compression.type", "brotli", false, "one of"},
		{"compression.gzip.level", "-1", true, ""},
		{"compression.gzip.level", "0", false, "[1, 9]"},
		{"leader.replication.throttled.replicas", "0:1,1:2", true, ""},
		{"leader.replication.throttled.replicas", "*", true, ""},
		{"leader.replication.throttled.replicas", "x", false, "partitionId"},
		{"write.caching", "true", true, ""},
		{"write.caching", "FALSE", true, ""},
		{"write.caching", "yes", false, "Invalid value yes for configuration write.caching: Expected value to be either true or false"},
		{"write.caching", "", false, "true or false"},
		{"flush.ms", "0", true, ""},
		{"flush.ms", "9223372036854775807", true, ""},
		{"flush.ms", "-1", false, "Invalid value -1 for configuration flush.ms: Value must be at least 0"},
		{"flush.ms", "100ms", false, "Not a number of type LONG"},
		{"no.such.config", "1", false, "Unknown topic config name: no.such.config"},
	}
	for _, tc := range tests {
		err := Validate(tc.name, tc.value)
		if tc.ok {
			if err != nil {
				t.Errorf("Validate(%s, %q) = %v, want ok", tc.name, tc.value, err)
			}
			continue
		}
		var e *Error
		if !errors.Is(err, kerr.InvalidConfig) || !errors.As(err, &e) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("Validate(%s, %q) = %v, want INVALID_CONFIG with %q", tc.name, tc.value, err, tc.reason)
		}
		if IsUnknown(err) != (tc.name == "no.such.config") {
			t.Errorf("Validate(%s, %q): IsUnknown = %v", tc.name, tc.value, IsUnknown(err))
		}
	}
}

func TestValidateAllReportsFirstByName(t *testing.T) {
	err := ValidateAll(map[string]string{"segment.ms": "0", "retention.ms": "x", "cleanup.policy": "delete"})
	var e *Error
	if !errors.As(err, &e) || e.Name != "retention.ms" {
		t.Fatalf("ValidateAll = %v, want retention.ms first", err)
	}
	if err := ValidateAll(nil); err != nil {
		t.Fatal(err)
	}
}

func TestValidateBroker(t *testing.T) {
	tests := []struct {
		name, value string
		ok          bool
	}{
		{"log.retention.ms", "1000", true},
		{"log.retention.ms", "-2", false},
		{"log.retention.hours", "24", true},
		{"log.retention.hours", "-1", true}, // forever, as in Kafka
		{"log.retention.minutes", "x", false},
		{"log.roll.hours", "1", true},
		{"log.roll.hours", "0", false},
		{"log.segment.bytes", "1048576", true},
		{"message.max.bytes", "-1", false},
		{"producer.id.expiration.ms", "60000", true},
		{"producer.id.expiration.ms", "0", false},
		{"transactional.id.expiration.ms", "3600000", true},
		{"retention.ms", "1000", false}, // a topic name, not a broker one
		{"broker.id", "3", false},       // read-only
		{"write.caching.default", "true", true},
		{"write.caching.default", "1", false},
		{"write.caching", "true", false}, // the topic's name
		{"log.flush.interval.ms", "100", true},
		{"log.flush.interval.ms", "-1", false},
	}
	for _, tc := range tests {
		err := ValidateBroker(tc.name, tc.value)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, kerr.InvalidConfig)) {
			t.Errorf("ValidateBroker(%s, %q) = %v, want ok %v", tc.name, tc.value, err, tc.ok)
		}
	}
	if typ, ok := BrokerConfigType("log.retention.hours"); !ok || typ != kmsg.ConfigTypeInt {
		t.Errorf("log.retention.hours type %v %v", typ, ok)
	}
	if typ, ok := BrokerConfigType(WriteCachingDefault); !ok || typ != kmsg.ConfigTypeBoolean {
		t.Errorf("%s type %v %v", WriteCachingDefault, typ, ok)
	}
}

func TestResolvePrecedence(t *testing.T) {
	static := map[string]string{"log.segment.bytes": "1048576", "log.retention.ms": "-1", "message.max.bytes": "2000000"}
	tests := []struct {
		name           string
		topic, cluster map[string]string
		check          func(c Config) bool
	}{
		{"Kafka defaults", nil, nil, func(c Config) bool {
			return c.SegmentMs == 604800000 && c.RetentionBytes == -1 && slices.Equal(c.CleanupPolicy, []string{"delete"}) && !c.LogAppendTime
		}},
		{"static", nil, nil, func(c Config) bool {
			return c.SegmentBytes == 1048576 && c.RetentionMs == -1 && c.MaxMessageBytes == 2000000
		}},
		{"cluster over static", nil, map[string]string{"log.retention.ms": "5000", "log.segment.bytes": "2097152"}, func(c Config) bool {
			return c.RetentionMs == 5000 && c.SegmentBytes == 2097152
		}},
		{"topic over cluster", map[string]string{"retention.ms": "7", "message.timestamp.type": "LogAppendTime"},
			map[string]string{"log.retention.ms": "5000"}, func(c Config) bool { return c.RetentionMs == 7 && c.LogAppendTime }},
		{"hours", nil, map[string]string{"log.retention.hours": "2", "log.roll.hours": "1"}, func(c Config) bool {
			return c.RetentionMs == 7_200_000 && c.SegmentMs == 3_600_000
		}},
		{"ms over minutes over hours", nil, map[string]string{"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "9"},
			func(c Config) bool { return c.RetentionMs == 9 }},
		{"minutes over hours", nil, map[string]string{"log.retention.hours": "2", "log.retention.minutes": "3"},
			func(c Config) bool { return c.RetentionMs == 180_000 }},
		{"invalid stored values are skipped", map[string]string{"retention.ms": "bogus", "unknown": "1"},
			map[string]string{"log.retention.ms": "-7"}, func(c Config) bool { return c.RetentionMs == -1 }},
		{"compact accepted", map[string]string{"cleanup.policy": "compact,delete"}, nil, func(c Config) bool {
			return slices.Equal(c.CleanupPolicy, []string{"compact", "delete"})
		}},
	}
	for _, tc := range tests {
		c := Resolve(tc.topic, tc.cluster, static)
		if tc.name == "Kafka defaults" {
			c = Resolve(tc.topic, tc.cluster, nil)
		}
		if !tc.check(c) {
			t.Errorf("%s: %+v", tc.name, c)
		}
	}
}

func TestDescribeSynonyms(t *testing.T) {
	value, syns, ok := Describe("retention.ms",
		map[string]string{"retention.ms": "1000"},
		map[string]string{"log.retention.hours": "1"},
		map[string]string{"log.retention.ms": "-1"})
	want := []Synonym{
		{"retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig},
		{"log.retention.hours", "1", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{"log.retention.ms", "-1", kmsg.ConfigSourceStaticBrokerConfig},
		{"log.retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig},
	}
	if !ok || value != "1000" || !slices.Equal(syns, want) {
		t.Fatalf("Describe = %q %+v %v", value, syns, ok)
	}
	value, syns, _ = Describe("retention.ms", nil, map[string]string{"log.retention.hours": "1"}, nil)
	if value != "3600000" || syns[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("from hours: %q %+v", value, syns)
	}
	if value, syns, _ := Describe("remote.storage.enable", nil, nil, nil); value != "false" || len(syns) != 0 {
		t.Fatalf("no broker synonym: %q %+v", value, syns)
	}
	if _, _, ok := Describe("nope", nil, nil, nil); ok {
		t.Fatal("unknown name described")
	}
}

func TestProducerIDExpiration(t *testing.T) {
	if got := ProducerIDExpirationMs(nil, nil); got != 86_400_000 {
		t.Fatalf("default %d", got)
	}
	static := map[string]string{ProducerIDExpiration: "1000"}
	if got := ProducerIDExpirationMs(nil, static); got != 1000 {
		t.Fatalf("static %d", got)
	}
	if got := ProducerIDExpirationMs(map[string]string{ProducerIDExpiration: "2000"}, static); got != 2000 {
		t.Fatalf("cluster %d", got)
	}
	if got := TransactionalIDExpirationMs(nil, nil); got != 604_800_000 {
		t.Fatalf("transactional default %d", got)
	}
}

// write.caching and flush.ms resolve like every topic config, and the
// flush interval a replica's group gets is bounded whatever flush.ms says.
func TestResolveWriteCaching(t *testing.T) {
	static := map[string]string{"log.flush.interval.ms": "100"}
	tests := []struct {
		name                   string
		topic, cluster, static map[string]string
		caching                bool
		flushMs                int64
		flush                  time.Duration
	}{
		{"Kafka defaults: off, flush.ms never", nil, nil, nil, false, math.MaxInt64, 0},
		{"static flush.ms alone turns nothing on", nil, nil, static, false, 100, 0},
		{"topic on, static 100", map[string]string{"write.caching": "true"}, nil, static, true, 100, 100 * time.Millisecond},
		{"topic on, flush.ms never becomes 100 ms", map[string]string{"write.caching": "TRUE"}, nil, nil, true, math.MaxInt64, 100 * time.Millisecond},
		{"flush.ms past a Duration means never", map[string]string{"write.caching": "true", "flush.ms": "9223372036855"}, nil, nil, true, 9223372036855, 100 * time.Millisecond},
		{"topic flush.ms", map[string]string{"write.caching": "true", "flush.ms": "250"}, nil, static, true, 250, 250 * time.Millisecond},
		{"flush.ms 0 is fsync on commit", map[string]string{"write.caching": "true", "flush.ms": "0"}, nil, static, true, 0, 0},
		{"cluster default on", nil, map[string]string{WriteCachingDefault: "true", "log.flush.interval.ms": "50"}, static, true, 50, 50 * time.Millisecond},
		{"static default on", nil, nil, map[string]string{WriteCachingDefault: "true", "log.flush.interval.ms": "100"}, true, 100, 100 * time.Millisecond},
		{"topic off over cluster on", map[string]string{"write.caching": "false"}, map[string]string{WriteCachingDefault: "true"}, static, false, 100, 0},
		{"cluster off over static on", nil, map[string]string{WriteCachingDefault: "false"}, map[string]string{WriteCachingDefault: "true"}, false, math.MaxInt64, 0},
		{"invalid stored value skipped", map[string]string{"write.caching": "yes"}, map[string]string{WriteCachingDefault: "true"}, static, true, 100, 100 * time.Millisecond},
	}
	for _, tc := range tests {
		c := Resolve(tc.topic, tc.cluster, tc.static)
		if c.WriteCaching != tc.caching || c.FlushMs != tc.flushMs || c.WriteCachingFlush() != tc.flush {
			t.Errorf("%s: write caching %v, flush.ms %d, flush %v; want %v, %d, %v",
				tc.name, c.WriteCaching, c.FlushMs, c.WriteCachingFlush(), tc.caching, tc.flushMs, tc.flush)
		}
	}
	value, syns, _ := Describe("write.caching", nil, nil, map[string]string{WriteCachingDefault: "false"})
	want := []Synonym{
		{WriteCachingDefault, "false", kmsg.ConfigSourceStaticBrokerConfig},
		{WriteCachingDefault, "false", kmsg.ConfigSourceDefaultConfig},
	}
	if value != "false" || !slices.Equal(syns, want) {
		t.Fatalf("Describe(write.caching) = %q %+v", value, syns)
	}
}
