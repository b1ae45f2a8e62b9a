package main

import (
	"fmt"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/broker/kafkabackend"
)

// shareGroupKeys are the KIP-932 share group keys, with Kafka's names in
// their help; share.auto.offset.reset is a group config in Kafka and a
// node default here.
func shareGroupKeys() []key {
	d := broker.DefaultShareGroups()
	return []key{
		{"share_state_partitions", int(d.StatePartitions), "partitions of the internal topic __share_group_state, created on first need (share.coordinator.state.topic.num.partitions)"},
		{"share_state_replication_factor", int(d.StateReplicationFactor), "replication factor of __share_group_state (at most the live brokers when it is created; share.coordinator.state.topic.replication.factor)"},
		{"share_record_lock_duration", d.LockDuration, "how long a share group member holds a record it acquired before it is delivered again (share.record.lock.duration.ms)"},
		{"share_delivery_count_limit", int(d.DeliveryLimit), "deliveries after which a released record is archived (share.delivery.count.limit)"},
		{"share_partition_max_record_locks", d.MaxRecordLocks, "most records in flight in one share partition (group.share.partition.max.record.locks)"},
		{"share_max_sessions", d.MaxSessions, "most share sessions a node keeps (group.share.max.share.sessions)"},
		{"share_auto_offset_reset", "latest", "where a new share partition starts: latest or earliest (share.auto.offset.reset, a node default)"},
	}
}

// shareGroupConfig reads shareGroupKeys; broker.Config.Validate checks
// the bounds.
func shareGroupConfig(g *getter) kafkabackend.ShareConfig {
	reset := g.string("share_auto_offset_reset")
	if reset != "latest" && reset != "earliest" {
		g.fail("share_auto_offset_reset", reset, fmt.Errorf("must be latest or earliest"))
	}
	return kafkabackend.ShareConfig{
		StatePartitions:        int32(g.int("share_state_partitions")),
		StateReplicationFactor: int16(g.int("share_state_replication_factor")),
		LockDuration:           g.duration("share_record_lock_duration"),
		DeliveryLimit:          int16(g.int("share_delivery_count_limit")),
		MaxRecordLocks:         g.int("share_partition_max_record_locks"),
		MaxSessions:            g.int("share_max_sessions"),
		ResetEarliest:          reset == "earliest",
	}
}
