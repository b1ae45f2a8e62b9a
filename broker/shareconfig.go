package broker

import (
	"time"

	"github.com/minikafka/minikafka-go/broker/kafkabackend"
	"github.com/minikafka/minikafka-go/sharepart"
)

// shareLockSweep is how often the node releases the expired locks of the
// share partitions it leads (kfake's share.record.lock.sweep.interval.ms;
// a fetch also releases them first).
const shareLockSweep = time.Second

// shareStateSweep is how often the node forgets the share state of
// deleted topics in the __share_group_state partitions it leads.
const shareStateSweep = time.Minute

// DefaultShareGroups are Kafka's defaults for share groups (KIP-932):
// share.coordinator.state.topic.num.partitions 50 and .replication.factor
// 3, share.record.lock.duration.ms 30000, share.delivery.count.limit 5,
// group.share.partition.max.record.locks 2000,
// group.share.max.share.sessions 2000, share.auto.offset.reset latest.
func DefaultShareGroups() kafkabackend.ShareConfig {
	return kafkabackend.ShareConfig{
		StatePartitions:        50,
		StateReplicationFactor: 3,
		LockDuration:           30 * time.Second,
		DeliveryLimit:          5,
		MaxRecordLocks:         2000,
		MaxSessions:            2000,
	}
}

// validateShareGroups checks the share groups' configuration, with
// Kafka's bounds where it has them.
func (c *Config) validateShareGroups() error {
	s := c.ShareGroups
	switch {
	case s.StatePartitions < 1 || s.StatePartitions > 1024:
		return bad("share_state_partitions", s.StatePartitions, "must be in 1..1024")
	case s.StateReplicationFactor < 1:
		return bad("share_state_replication_factor", s.StateReplicationFactor, "must be at least 1")
	case s.LockDuration < time.Second || s.LockDuration > time.Hour:
		return bad("share_record_lock_duration", s.LockDuration, "must be in 1s..1h")
	case s.DeliveryLimit < 2 || s.DeliveryLimit > 10:
		return bad("share_delivery_count_limit", s.DeliveryLimit, "must be in 2..10")
	case s.MaxRecordLocks < 100 || s.MaxRecordLocks > sharepart.MaxWindow:
		return bad("share_partition_max_record_locks", s.MaxRecordLocks, "must be in 100..%d", sharepart.MaxWindow)
	case s.MaxSessions < 1:
		return bad("share_max_sessions", s.MaxSessions, "must be at least 1")
	}
	return nil
}
