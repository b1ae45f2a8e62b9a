package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/multiraft"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeYAML(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestShippedConfigsLoad(t *testing.T) {
	for _, name := range []string{"single", "node1", "node2", "node3"} {
		o, err := loadConfig([]string{"--config", "../../configs/" + name + ".yaml"}, env(), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%s.yaml: %v", name, err)
		}
		if o.NodeID < 1 || o.DataDir == "" || o.KafkaAddr == "" {
			t.Fatalf("%s.yaml loaded as %+v", name, o.Config)
		}
	}
	o, _ := loadConfig([]string{"--config", "../../configs/node3.yaml"}, env(), &bytes.Buffer{})
	if o.NodeID != 3 || o.KafkaAddr != "127.0.0.1:9094" || o.BootstrapExpect != 3 || len(o.Join) != 3 {
		t.Fatalf("node3.yaml: %+v", o.Config)
	}
}

func TestPrecedenceFileEnvFlag(t *testing.T) {
	p := writeYAML(t, "node_id: 4\ndata_dir: /tmp/x\nraft:\n  heartbeat_timeout: 800ms\n  election_timeout: 900ms\ndefault_partitions: 2\n")
	o, err := loadConfig([]string{"--config", p, "--default-partitions", "7"},
		env("MINIKAFKA_NODE_ID", "5", "MINIKAFKA_DEFAULT_PARTITIONS", "6", "MINIKAFKA_RAFT_ELECTION_TIMEOUT", "1s",
			"MINIKAFKA_JOIN", "127.0.0.1:1, 127.0.0.1:2"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.NodeID != 5 {
		t.Errorf("node_id = %d, want 5 from the environment", o.NodeID)
	}
	if o.DefaultPartitions != 7 {
		t.Errorf("default_partitions = %d, want 7 from the flag", o.DefaultPartitions)
	}
	if o.PartitionRaft.HeartbeatTimeout != 800*time.Millisecond || o.PartitionRaft.ElectionTimeout != time.Second {
		t.Errorf("raft timing = %+v", o.PartitionRaft)
	}
	if strings.Join(o.Join, ",") != "127.0.0.1:1,127.0.0.1:2" {
		t.Errorf("join = %q", o.Join)
	}
	if o.DataDir != "/tmp/x" {
		t.Errorf("data_dir = %q from the file", o.DataDir)
	}
	o, err = loadConfig([]string{"--group-initial-rebalance-delay", "250ms"}, env("MINIKAFKA_GROUP_MAX_SESSION_TIMEOUT", "1m"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.GroupInitialRebalanceDelay != 250*time.Millisecond || o.GroupMaxSessionTimeout != time.Minute || o.GroupMinSessionTimeout != 6*time.Second {
		t.Errorf("group settings: delay %v, session timeouts %v..%v", o.GroupInitialRebalanceDelay, o.GroupMinSessionTimeout, o.GroupMaxSessionTimeout)
	}
}

func TestInvalidConfigNamesKeyAndValue(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		env   []string
		yaml  string
		key   string
		value string
	}{
		{name: "node id not a number", env: []string{"MINIKAFKA_NODE_ID", "abc"}, key: "node_id", value: "abc"},
		{name: "node id zero", args: []string{"--node-id", "0"}, key: "node_id", value: "0"},
		{name: "bad duration", yaml: "raft:\n  heartbeat_timeout: soon\n", key: "raft.heartbeat_timeout", value: "soon"},
		{name: "bad bool", args: []string{"--auto-create-topics", "maybe"}, key: "auto_create_topics", value: "maybe"},
		{name: "bad address", args: []string{"--kafka-addr", "localhost"}, key: "kafka_addr", value: "localhost"},
		{name: "bad port", args: []string{"--raft-addr", "127.0.0.1:99999"}, key: "raft_addr", value: "99999"},
		{name: "source address with a port", args: []string{"--raft-source-addr", "127.0.0.2:1"}, key: "raft_source_addr", value: "127.0.0.2:1"},
		{name: "gossip source not an IP", env: []string{"MINIKAFKA_GOSSIP_SOURCE_ADDR", "node2"}, key: "gossip_source_addr", value: "node2"},
		{name: "cluster without seeds", args: []string{"--bootstrap-expect", "3"}, key: "join", value: "[]"},
		{name: "bind all without advertised", args: []string{"--kafka-addr", "0.0.0.0:9092"}, key: "advertised_kafka_addr"},
		{name: "tiny segment", args: []string{"--segment-bytes", "10"}, key: "segment_bytes", value: "10"},
		{name: "page cache keep zero", args: []string{"--log-page-cache-keep-bytes", "0"}, key: "log_page_cache_keep_bytes", value: "0"},
		{name: "page cache keep below -1", env: []string{"MINIKAFKA_LOG_PAGE_CACHE_KEEP_BYTES", "-2"}, key: "log_page_cache_keep_bytes", value: "-2"},
		{name: "negative log rate", args: []string{"--log-rate-limit", "-1"}, key: "log_rate_limit", value: "-1"},
		{name: "log rate interval zero", env: []string{"MINIKAFKA_LOG_RATE_INTERVAL", "0s"}, key: "log_rate_interval", value: "0s"},
		{name: "too few open files", args: []string{"--partition-max-open-files", "8"}, key: "partition_max_open_files", value: "8"},
		{name: "negative open files", env: []string{"MINIKAFKA_PARTITION_MAX_OPEN_FILES", "-1"}, key: "partition_max_open_files", value: "-1"},
		{name: "bad debug address", args: []string{"--debug-addr", "localhost"}, key: "debug_addr", value: "localhost"},
		{name: "election below heartbeat", args: []string{"--raft-election-timeout", "10ms"}, key: "raft"},
		{name: "no connections allowed", args: []string{"--max-connections", "0"}, key: "max_connections", value: "0"},
		{name: "queued budget below two requests", args: []string{"--queued-max-request-bytes", "104857600"}, key: "queued_max_request_bytes", value: "104857600"},
		{name: "idle too short", env: []string{"MINIKAFKA_CONNECTIONS_MAX_IDLE", "0s"}, key: "connections_max_idle", value: "0s"},
		{name: "no partitions allowed", args: []string{"--max-partitions", "0"}, key: "max_partitions", value: "0"},
		{name: "offsets topic of no partitions", args: []string{"--offsets-topic-partitions", "0"}, key: "offsets_topic_partitions", value: "0"},
		{name: "unknown share offset reset", args: []string{"--share-auto-offset-reset", "none"}, key: "share_auto_offset_reset", value: "none"},
		{name: "share delivery limit too high", args: []string{"--share-delivery-count-limit", "11"}, key: "share_delivery_count_limit", value: "11"},
		{name: "share locks past the window", env: []string{"MINIKAFKA_SHARE_PARTITION_MAX_RECORD_LOCKS", "20000"}, key: "share_partition_max_record_locks", value: "20000"},
		{name: "share lock too short", args: []string{"--share-record-lock-duration", "10ms"}, key: "share_record_lock_duration", value: "10ms"},
		{name: "negative rebalance delay", args: []string{"--group-initial-rebalance-delay", "-1s"}, key: "group_initial_rebalance_delay", value: "-1s"},
		{name: "unknown log store", yaml: "raft:\n  log_store: rocksdb\n", key: "raft.log_store", value: "rocksdb"},
		{name: "write caching not a bool", args: []string{"--write-caching-default", "maybe"}, key: "write_caching_default", value: "maybe"},
		{name: "write caching bad yaml", yaml: "write_caching_default: sometimes\n", key: "write_caching_default", value: "sometimes"},
		{name: "flush interval negative", args: []string{"--log-flush-interval-ms", "-5"}, key: "log_flush_interval_ms", value: "-5"},
		{name: "flush interval a duration", env: []string{"MINIKAFKA_LOG_FLUSH_INTERVAL_MS", "100ms"}, key: "log_flush_interval_ms", value: "100ms"},
		{name: "super user not a principal", yaml: "super_users: [admin]\n", key: "super_users[0]", value: "admin"},
		{name: "authorization not a bool", args: []string{"--authorization-enabled", "maybe"}, key: "authorization_enabled", value: "maybe"},
		{name: "offsets retention zero", args: []string{"--offsets-retention-minutes", "0"}, key: "offsets_retention_minutes", value: "0"},
		{name: "offsets retention a duration", env: []string{"MINIKAFKA_OFFSETS_RETENTION_MINUTES", "7d"}, key: "offsets_retention_minutes", value: "7d"},
		{name: "offsets check never", args: []string{"--offsets-retention-check-interval", "0s"}, key: "offsets_retention_check_interval", value: "0s"},
		{name: "txn id expiration zero", args: []string{"--transactional-id-expiration-ms", "0"}, key: "transactional_id_expiration_ms", value: "0"},
		{name: "txn id expiration past int", yaml: "transactional_id_expiration_ms: 2147483648\n", key: "transactional_id_expiration_ms", value: "2147483648"},
		{name: "txn id check never", args: []string{"--transaction-remove-expired-interval", "0s"}, key: "transaction_remove_expired_interval", value: "0s"},
		{name: "one quota window", args: []string{"--quota-window-num", "1"}, key: "quota_window_num", value: "1"},
		{name: "quota window of no seconds", yaml: "quota_window_size_seconds: 0\n", key: "quota_window_size_seconds", value: "0"},
		{name: "quota window a duration", env: []string{"MINIKAFKA_QUOTA_WINDOW_SIZE_SECONDS", "1s"}, key: "quota_window_size_seconds", value: "1s"},
		{name: "no cleaner threads", args: []string{"--log-cleaner-threads", "0"}, key: "log_cleaner_threads", value: "0"},
		{name: "a dedupe buffer too small", args: []string{"--log-cleaner-dedupe-buffer-size", "1000"}, key: "log_cleaner_dedupe_buffer_size", value: "1000"},
		{name: "cleaner backoff zero", env: []string{"MINIKAFKA_LOG_CLEANER_BACKOFF", "0s"}, key: "log_cleaner_backoff", value: "0s"},
		{name: "session bounds crossed", yaml: "group_min_session_timeout: 10s\ngroup_max_session_timeout: 5s\n", key: "group_max_session_timeout", value: "5s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.yaml != "" {
				args = append([]string{"--config", writeYAML(t, "node_id: 1\n"+c.yaml)}, args...)
			}
			_, err := loadConfig(args, env(c.env...), &bytes.Buffer{})
			var ce *broker.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, broker.ErrInvalidConfig) {
				t.Fatalf("err = %v, want a *broker.ConfigError", err)
			}
			if ce.Key != c.key || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.value) {
				t.Fatalf("err %q names key %q; want key %q and value %q", err, ce.Key, c.key, c.value)
			}
		})
	}
}

func TestUnknownKeyInFile(t *testing.T) {
	p := writeYAML(t, "node_id: 1\nnode_idd: 2\n")
	_, err := loadConfig([]string{"--config", p}, env(), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `"node_idd"`) {
		t.Fatalf("err = %v, want it to name the unknown key", err)
	}
}

func TestRunExitsNonZeroOnBadConfig(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"--node-id", "x"}, env(), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "node_id=x") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if code := run([]string{"--config", "/does/not/exist.yaml"}, env(), &out, &errOut); code != 2 {
		t.Fatalf("missing config file: exit %d", code)
	}
}

func TestDebugServerServesPprof(t *testing.T) {
	addr, stop, err := serveDebug("127.0.0.1:0", slog.New(slog.DiscardHandler), map[string]func() any{"answer": func() any { return 42 }})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("goroutine profile:")) {
		t.Fatalf("GET goroutine profile: status %d, err %v, body %.100q", resp.StatusCode, err, body)
	}
	resp, err = http.Get("http://" + addr + "/debug/vars")
	if err != nil {
		t.Fatal(err)
	}
	var vars struct {
		Answer   int             `json:"answer"`
		Memstats json.RawMessage `json:"memstats"`
	}
	err = json.NewDecoder(resp.Body).Decode(&vars)
	resp.Body.Close()
	if err != nil || vars.Answer != 42 || len(vars.Memstats) == 0 {
		t.Fatalf("GET /debug/vars: err %v, answer %d, memstats %.40s", err, vars.Answer, vars.Memstats)
	}
	if _, _, err := serveDebug("bad", slog.New(slog.DiscardHandler), nil); err == nil {
		t.Fatal(`serveDebug("bad") succeeded`)
	}
}

func TestLogStoreKey(t *testing.T) {
	for _, c := range []struct {
		args []string
		want multiraft.LogStore
	}{
		{nil, multiraft.LogStorePebble},
		{[]string{"--raft-log-store", "wal"}, multiraft.LogStoreWAL},
		{[]string{"--raft-log-store", "boltdb"}, multiraft.LogStoreBoltDB},
		{[]string{"--raft-log-store", "pebble"}, multiraft.LogStorePebble},
	} {
		o, err := loadConfig(c.args, env(), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.PartitionLogStore != c.want {
			t.Errorf("%v: log store %q, want %q", c.args, o.PartitionLogStore, c.want)
		}
	}
}

// write_caching_default and log_flush_interval_ms: defaults (off, 100 ms),
// then the file, the environment and flags, each over the one before.
func TestWriteCachingKeys(t *testing.T) {
	p := writeYAML(t, "node_id: 1\nwrite_caching_default: true\nlog_flush_interval_ms: 250\n")
	for _, c := range []struct {
		name    string
		args    []string
		env     []string
		caching bool
		flushMs int64
	}{
		{"defaults", nil, nil, false, 100},
		{"file", []string{"--config", p}, nil, true, 250},
		{"env over file", []string{"--config", p}, []string{"MINIKAFKA_WRITE_CACHING_DEFAULT", "false", "MINIKAFKA_LOG_FLUSH_INTERVAL_MS", "0"}, false, 0},
		{"flag over env", []string{"--write-caching-default", "true", "--log-flush-interval-ms", "40"}, []string{"MINIKAFKA_WRITE_CACHING_DEFAULT", "false"}, true, 40},
	} {
		o, err := loadConfig(c.args, env(c.env...), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if o.WriteCachingDefault != c.caching || o.LogFlushIntervalMs != c.flushMs {
			t.Errorf("%s: write_caching_default %v, log_flush_interval_ms %d; want %v, %d",
				c.name, o.WriteCachingDefault, o.LogFlushIntervalMs, c.caching, c.flushMs)
		}
	}
}

// The expiry keys default to Kafka's values and take file, env and flag
// values.
func TestExpiryKeys(t *testing.T) {
	o, err := loadConfig(nil, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.OffsetsRetention != 7*24*time.Hour || o.OffsetsRetentionCheckInterval != 10*time.Minute ||
		o.TransactionalIDExpirationMs != 604800000 || o.TxnRemoveExpiredInterval != time.Hour {
		t.Fatalf("defaults: offsets retention %v every %v, transactional ids %d ms every %v", o.OffsetsRetention,
			o.OffsetsRetentionCheckInterval, o.TransactionalIDExpirationMs, o.TxnRemoveExpiredInterval)
	}
	p := writeYAML(t, "node_id: 1\noffsets_retention_minutes: 1440\ntransactional_id_expiration_ms: 60000\n")
	o, err = loadConfig([]string{"--config", p, "--offsets-retention-check-interval", "30s"},
		env("MINIKAFKA_TRANSACTION_REMOVE_EXPIRED_INTERVAL", "5m"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.OffsetsRetention != 24*time.Hour || o.OffsetsRetentionCheckInterval != 30*time.Second ||
		o.TransactionalIDExpirationMs != 60000 || o.TxnRemoveExpiredInterval != 5*time.Minute {
		t.Fatalf("set: offsets retention %v every %v, transactional ids %d ms every %v", o.OffsetsRetention,
			o.OffsetsRetentionCheckInterval, o.TransactionalIDExpirationMs, o.TxnRemoveExpiredInterval)
	}
}

func TestAuthorizationKeys(t *testing.T) {
	p := writeYAML(t, "node_id: 1\nraft_allow_unauthenticated: true\nauthorization_enabled: true\nsuper_users: [\"User:admin\", \"User:CN=ops,O=Example\"]\nallow_everyone_if_no_acl_found: true\n")
	o, err := loadConfig([]string{"--config", p}, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if !o.AuthorizationEnabled || !o.AllowEveryoneIfNoACLFound || len(o.SuperUsers) != 2 || o.SuperUsers[1] != "User:CN=ops,O=Example" {
		t.Fatalf("loaded %v %v %q", o.AuthorizationEnabled, o.AllowEveryoneIfNoACLFound, o.SuperUsers)
	}
	o, err = loadConfig([]string{"--node-id", "1"}, env("MINIKAFKA_SUPER_USERS", "User:a,User:b"), &bytes.Buffer{})
	if err != nil || o.AuthorizationEnabled || o.AllowEveryoneIfNoACLFound || len(o.SuperUsers) != 2 {
		t.Fatalf("defaults and env: %v %v %q, %v", o.AuthorizationEnabled, o.AllowEveryoneIfNoACLFound, o.SuperUsers, err)
	}
}

func TestSASLGuardKeys(t *testing.T) {
	o, err := loadConfig([]string{"--node-id", "1"}, env(), &bytes.Buffer{})
	if err != nil || o.ConnectionFailedAuthenticationDelay != 100*time.Millisecond || o.MaxFailedAuthenticationsPerIP != 20 ||
		o.FailedAuthenticationsWindow != time.Minute {
		t.Fatalf("defaults: %v %d %v, %v", o.ConnectionFailedAuthenticationDelay, o.MaxFailedAuthenticationsPerIP, o.FailedAuthenticationsWindow, err)
	}
	p := writeYAML(t, "node_id: 1\nconnection_failed_authentication_delay: 0s\nmax_failed_authentications_per_ip: 0\nfailed_authentications_window: 10m\n")
	o, err = loadConfig([]string{"--config", p}, env(), &bytes.Buffer{})
	if err != nil || o.ConnectionFailedAuthenticationDelay != 0 || o.MaxFailedAuthenticationsPerIP != 0 || o.FailedAuthenticationsWindow != 10*time.Minute {
		t.Fatalf("from the file: %v %d %v, %v", o.ConnectionFailedAuthenticationDelay, o.MaxFailedAuthenticationsPerIP, o.FailedAuthenticationsWindow, err)
	}
	for _, c := range []struct{ flag, key string }{
		{"--connection-failed-authentication-delay=-1s", "connection_failed_authentication_delay"},
		{"--max-failed-authentications-per-ip=-1", "max_failed_authentications_per_ip"},
		{"--failed-authentications-window=0s", "failed_authentications_window"},
	} {
		_, err := loadConfig([]string{"--node-id", "1", c.flag}, env(), &bytes.Buffer{})
		var ce *broker.ConfigError
		if !errors.As(err, &ce) || ce.Key != c.key {
			t.Errorf("%s: %v, want an error naming %s", c.flag, err, c.key)
		}
	}
}

// The storage keys: defaults (5% reserve, alert at 10%), then the file,
// the environment and flags; the Raft log's byte bounds next to its
// counts.
func TestStorageKeys(t *testing.T) {
	p := writeYAML(t, "node_id: 1\nstorage_min_free_bytes: 1073741824\nstorage_space_alert_free_threshold_percent: 20\nraft:\n  snapshot_bytes: 1048576\n  trailing_bytes: 0\n")
	o, err := loadConfig([]string{"--node-id", "1"}, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if d := broker.DefaultStorage(); o.Storage != d || o.PartitionRaft.SnapshotBytes != 32<<20 || o.PartitionRaft.TrailingBytes != 8<<20 {
		t.Fatalf("defaults: %+v, raft %d/%d", o.Storage, o.PartitionRaft.SnapshotBytes, o.PartitionRaft.TrailingBytes)
	}
	if o.PageCacheKeepBytes != 8<<20 {
		t.Fatalf("log_page_cache_keep_bytes default %d, want 8 MiB", o.PageCacheKeepBytes)
	}
	if o, err := loadConfig([]string{"--node-id", "1", "--log-page-cache-keep-bytes", "-1"}, env(), &bytes.Buffer{}); err != nil || o.PageCacheKeepBytes != -1 {
		t.Fatalf("--log-page-cache-keep-bytes -1: %d, %v", o.PageCacheKeepBytes, err)
	}
	o, err = loadConfig([]string{"--config", p, "--storage-min-free-percent", "2.5"},
		env("MINIKAFKA_STORAGE_SPACE_ALERT_FREE_THRESHOLD_BYTES", "2147483648"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := broker.StorageConfig{MinFreeBytes: 1 << 30, MinFreePercent: 2.5, AlertFreeBytes: 2 << 30, AlertFreePercent: 20}
	if o.Storage != want || o.PartitionRaft.SnapshotBytes != 1<<20 || o.PartitionRaft.TrailingBytes != 0 {
		t.Fatalf("file, env and flags: %+v, raft %d/%d; want %+v, 1 MiB/0", o.Storage, o.PartitionRaft.SnapshotBytes, o.PartitionRaft.TrailingBytes, want)
	}
	for _, bad := range [][]string{{"--storage-min-free-percent", "60"}, {"--storage-min-free-bytes", "-1"}, {"--raft-snapshot-bytes", "-5"}} {
		_, err := loadConfig(append([]string{"--node-id", "1"}, bad...), env(), &bytes.Buffer{})
		var ce *broker.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%v: %v, want a *broker.ConfigError", bad, err)
		}
	}
}

func TestConsumerGroupKeys(t *testing.T) {
	o, err := loadConfig(nil, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := o.GroupConsumer.WithDefaults()
	if err != nil || gc.SessionTimeout != 45*time.Second || gc.HeartbeatInterval != 5*time.Second ||
		!slices.Equal(gc.Assignors, []string{"uniform", "range"}) || gc.MigrationPolicy != "bidirectional" {
		t.Fatalf("defaults: %+v %v", gc, err)
	}
	p := writeYAML(t, "node_id: 1\ngroup_consumer_min_session_timeout: 1s\ngroup_consumer_session_timeout: 3s\n"+
		"group_consumer_min_heartbeat_interval: 100ms\ngroup_consumer_assignors: [range]\n")
	o, err = loadConfig([]string{"--config", p, "--group-consumer-heartbeat-interval", "500ms"},
		env("MINIKAFKA_GROUP_CONSUMER_MIGRATION_POLICY", "upgrade"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if gc := o.GroupConsumer; gc.SessionTimeout != 3*time.Second || gc.HeartbeatInterval != 500*time.Millisecond ||
		!slices.Equal(gc.Assignors, []string{"range"}) || gc.MigrationPolicy != "upgrade" {
		t.Fatalf("set: %+v", gc)
	}
	_, err = loadConfig([]string{"--group-consumer-session-timeout", "1s"}, env(), &bytes.Buffer{})
	if ce, ok := errors.AsType[*broker.ConfigError](err); !ok || ce.Key != "group_consumer_session_timeout" {
		t.Fatalf("a session timeout below its min: %v, want an error naming group_consumer_session_timeout", err)
	}
}
