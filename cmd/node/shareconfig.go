package main

import (
	"fmt"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/broker/kafkabackend"
	"github.com/minikafka/minikafka-go/groupcoord"
)

// shareGroupKeys are the KIP-932 share group keys, with Kafka's names in
// their help: membership (group.share.*) and share partitions;
// share.auto.offset.reset is a group config in Kafka and a node default
// here.
func shareGroupKeys() []key {
	d := broker.DefaultShareGroups()
	return []key{
		{"group_share_session_timeout", groupcoord.DefaultShareSessionTimeout, "session timeout of share group members (group.share.session.timeout.ms)"},
		{"group_share_heartbeat_interval", groupcoord.DefaultShareHeartbeatInterval, "heartbeat interval given to share group members, below group_share_session_timeout (group.share.heartbeat.interval.ms)"},
		{"group_share_max_size", groupcoord.DefaultShareMaxSize, "most members of a share group, at most 1000 (group.share.max.size)"},
		{"share_state_partitions", int(d.StatePartitions), "partitions of the internal topic __share_group_state, created on first need (share.coordinator.state.topic.num.partitions)"},
		{"share_state_replication_factor", int(d.StateReplicationFactor), "replication factor of __share_group_state (at most the live brokers when it is created; share.coordinator.state.topic.replication.factor)"},
		{"share_record_lock_duration", d.LockDuration, "how long a share group member holds a record it acquired before it is delivered again (share.record.lock.duration.ms)"},
		{"share_delivery_count_limit", int(d.DeliveryLimit), "deliveries after which a released record is archived (share.delivery.count.limit)"},
		{"share_partition_max_record_locks", d.MaxRecordLocks, "most records in flight in one share partition (group.share.partition.max.record.locks)"},
		{"share_max_sessions", d.MaxSessions, "most share sessions a node keeps (group.share.max.share.sessions)"},
		{"share_auto_offset_reset", "latest", "where a new share partition starts: latest or earliest (share.auto.offset.reset, a node default)"},
	}
}

// shareMembershipConfig reads the group_share_* keys.
func shareMembershipConfig(g *getter) groupcoord.ShareConfig {
	return groupcoord.ShareConfig{SessionTimeout: g.duration("group_share_session_timeout"),
		HeartbeatInterval: g.duration("group_share_heartbeat_interval"), MaxSize: g.int("group_share_max_size")}
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
