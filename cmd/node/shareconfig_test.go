package main

import (
	"bytes"
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
