package main

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
)

// TestShareGroupKeys: the share group keys default to Kafka's values and
// reach the node's config from a file, the environment and flags.
func TestShareGroupKeys(t *testing.T) {
	o, err := loadConfig(nil, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.ShareGroups != broker.DefaultShareGroups() {
		t.Fatalf("defaults %+v, want %+v", o.ShareGroups, broker.DefaultShareGroups())
	}
	p := writeYAML(t, "node_id: 1\nshare_auto_offset_reset: earliest\nshare_state_partitions: 8\n")
	o, err = loadConfig([]string{"--config", p, "--share-record-lock-duration", "5s", "--share-delivery-count-limit", "3"},
		env("MINIKAFKA_SHARE_PARTITION_MAX_RECORD_LOCKS", "500", "MINIKAFKA_SHARE_MAX_SESSIONS", "10"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	s := o.ShareGroups
	if !s.ResetEarliest || s.StatePartitions != 8 || s.LockDuration != 5*time.Second || s.DeliveryLimit != 3 ||
		s.MaxRecordLocks != 500 || s.MaxSessions != 10 {
		t.Fatalf("set: %+v", s)
	}
}

// The share group membership keys (Kafka's group.share.*) have Kafka's defaults,
// are read from the file, flags and environment, and a bad value is an
// error naming its key.
func TestShareMembershipKeys(t *testing.T) {
	o, err := loadConfig(nil, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := o.GroupShare.WithDefaults(); err != nil || sc.SessionTimeout != 45*time.Second ||
		sc.HeartbeatInterval != 5*time.Second || sc.MaxSize != 200 {
		t.Fatalf("defaults: %+v %v", sc, err)
	}
	p := writeYAML(t, "node_id: 1\ngroup_share_session_timeout: 3s\n")
	o, err = loadConfig([]string{"--config", p, "--group-share-heartbeat-interval", "500ms"},
		env("MINIKAFKA_GROUP_SHARE_MAX_SIZE", "7"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if sc := o.GroupShare; sc.SessionTimeout != 3*time.Second || sc.HeartbeatInterval != 500*time.Millisecond || sc.MaxSize != 7 {
		t.Fatalf("set: %+v", sc)
	}
	for args, key := range map[string]string{
		"--group-share-heartbeat-interval=1m": "group_share_heartbeat_interval",
		"--group-share-max-size=1001":         "group_share_max_size",
	} {
		_, err = loadConfig([]string{args}, env(), &bytes.Buffer{})
		if ce, ok := errors.AsType[*broker.ConfigError](err); !ok || ce.Key != key {
			t.Errorf("%s: %v, want an error naming %s", args, err, key)
		}
	}
}
