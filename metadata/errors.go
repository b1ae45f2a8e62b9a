package metadata

import (
	"errors"
	"fmt"
)

// Sentinels. Every error that Apply, Place, Decode or DecodeSnapshot returns
// wraps exactly one of the first group (check with errors.Is); the typed
// errors below carry the details. The Kafka code each one is meant to map to
// is given in brackets.
var (
	// ErrClusterNotInitialized: a command other than InitCluster arrived
	// before the cluster id was set. [COORDINATOR_NOT_AVAILABLE, retriable]
	ErrClusterNotInitialized = errors.New("metadata: cluster not initialized")
	// ErrClusterIDMismatch: InitCluster with an id other than the one set.
	ErrClusterIDMismatch = errors.New("metadata: cluster already initialized with another id")
	// ErrInvalidClusterID: an empty cluster id.
	ErrInvalidClusterID = errors.New("metadata: invalid cluster id")
	// ErrInvalidBroker: a broker registration with a bad id or address.
	ErrInvalidBroker = errors.New("metadata: invalid broker registration")
	// ErrInvalidTopic: an illegal topic name. [INVALID_TOPIC_EXCEPTION]
	ErrInvalidTopic = errors.New("metadata: invalid topic name")
	// ErrTopicExists: the topic name is taken. [TOPIC_ALREADY_EXISTS]
	ErrTopicExists = errors.New("metadata: topic already exists")
	// ErrInvalidPartitions: a partition count outside 1..MaxPartitions.
	// [INVALID_PARTITIONS]
	ErrInvalidPartitions = errors.New("metadata: invalid number of partitions")
	// ErrPartitionLimit: a CreateTopic or CreatePartitions that would take
	// the cluster past the max_partitions its proposer stamped on it.
	// [POLICY_VIOLATION]
	ErrPartitionLimit = errors.New("metadata: cluster partition limit reached")
	// ErrInvalidReplicationFactor: a replication factor below 1 or above the
	// number of brokers. [INVALID_REPLICATION_FACTOR]
	ErrInvalidReplicationFactor = errors.New("metadata: invalid replication factor")
	// ErrInvalidReplicaAssignment: an assignment that does not fit the
	// topic; an *AssignmentError also wraps one of the reasons below.
	// [INVALID_REPLICA_ASSIGNMENT]
	ErrInvalidReplicaAssignment = errors.New("metadata: invalid replica assignment")
	// ErrInvalidConfig: a config entry that cannot be stored: an empty key,
	// an unknown name or a bad value (see topicconfig). [INVALID_CONFIG]
	ErrInvalidConfig = errors.New("metadata: invalid config")
	// ErrUnknownTopicOrPartition: no such topic, or no such partition in it.
	// [UNKNOWN_TOPIC_OR_PARTITION]
	ErrUnknownTopicOrPartition = errors.New("metadata: unknown topic or partition")
	// ErrInvalidLeader: a leader report that cannot be true (see
	// *LeaderReportError for the reason).
	ErrInvalidLeader = errors.New("metadata: invalid partition leader report")
	// ErrInvalidTransactionalID: an empty transactional id. [INVALID_REQUEST]
	ErrInvalidTransactionalID = errors.New("metadata: invalid transactional id")
	// ErrProducerIDsExhausted: every producer id has been handed out.
	// [UNKNOWN_SERVER_ERROR]
	ErrProducerIDsExhausted = errors.New("metadata: producer ids exhausted")
	// ErrMalformedCommand: bytes that are not a command of a known type.
	ErrMalformedCommand = errors.New("metadata: malformed command")
	// ErrUnknownCommand: a command type or version this build cannot read;
	// a newer node proposed it (see the package doc on upgrades).
	ErrUnknownCommand = errors.New("metadata: unknown command type or version")
	// ErrMalformedSnapshot: bytes that are not a snapshot this build can read.
	ErrMalformedSnapshot = errors.New("metadata: malformed snapshot")
)

// Reasons wrapped by *AssignmentError next to ErrInvalidReplicaAssignment.
var (
	// ErrPartitionCount: the assignment lists a different number of
	// partitions than the command's partition count.
	ErrPartitionCount = errors.New("assignment partition count differs from the topic's")
	// ErrReplicaCount: a partition's replica list is not as long as the
	// replication factor.
	ErrReplicaCount = errors.New("replica count differs from the replication factor")
	// ErrDuplicateReplica: a broker appears twice in one partition.
	ErrDuplicateReplica = errors.New("broker listed twice in one partition")
	// ErrUnknownBroker: a replica on a broker that never registered.
	ErrUnknownBroker = errors.New("replica on an unregistered broker")
)

// Reasons wrapped by *LeaderReportError next to ErrInvalidLeader.
var (
	// ErrNotReplica: the reported leader is not in the partition's replicas.
	ErrNotReplica = errors.New("leader is not a replica of the partition")
	// ErrNegativeLeaderEpoch: the reported epoch is below zero.
	ErrNegativeLeaderEpoch = errors.New("leader epoch is negative")
	// ErrLeaderEpochConflict: another leader was already recorded for the
	// same epoch. Raft allows one leader per term, so this is a bug in the
	// reporter.
	ErrLeaderEpochConflict = errors.New("another leader already holds this epoch")
)

// ClusterIDMismatchError is an InitCluster whose id differs from the stored one.
type ClusterIDMismatchError struct{ Have, Proposed string }

func (e *ClusterIDMismatchError) Error() string {
	return fmt.Sprintf("metadata: cluster id is %q, InitCluster proposed %q", e.Have, e.Proposed)
}
func (e *ClusterIDMismatchError) Unwrap() error { return ErrClusterIDMismatch }

// InvalidBrokerError is a RegisterBroker that cannot be stored.
type InvalidBrokerError struct {
	ID     int32
	Reason string // for people, not for matching
}

func (e *InvalidBrokerError) Error() string {
	return fmt.Sprintf("metadata: broker %d: %s", e.ID, e.Reason)
}
func (e *InvalidBrokerError) Unwrap() error { return ErrInvalidBroker }

// InvalidTopicError is an illegal topic name.
type InvalidTopicError struct {
	Name   string
	Reason string // for people, not for matching
}

func (e *InvalidTopicError) Error() string {
	return fmt.Sprintf("metadata: topic %q: %s", e.Name, e.Reason)
}
func (e *InvalidTopicError) Unwrap() error { return ErrInvalidTopic }

// TopicExistsError is a CreateTopic for a name that is taken.
type TopicExistsError struct{ Name string }

func (e *TopicExistsError) Error() string {
	return fmt.Sprintf("metadata: topic %q already exists", e.Name)
}
func (e *TopicExistsError) Unwrap() error { return ErrTopicExists }

// InvalidPartitionsError is a partition count outside 1..MaxPartitions.
type InvalidPartitionsError struct{ Partitions int32 }

func (e *InvalidPartitionsError) Error() string {
	return fmt.Sprintf("metadata: %d partitions, want 1 to %d", e.Partitions, MaxPartitions)
}
func (e *InvalidPartitionsError) Unwrap() error { return ErrInvalidPartitions }

// PartitionLimitError is a CreateTopic or CreatePartitions that would take
// the cluster's partitions past the limit stamped on it.
type PartitionLimitError struct {
	Topic string
	Total int   // the cluster's partitions had the command been applied
	Limit int32 // the proposer's max_partitions
}

func (e *PartitionLimitError) Error() string {
	return fmt.Sprintf("metadata: topic %q: the cluster would hold %d partitions, more than max_partitions (%d)", e.Topic, e.Total, e.Limit)
}
func (e *PartitionLimitError) Unwrap() error { return ErrPartitionLimit }

// NodeReplicaLimitError is a CreateTopic or CreatePartitions after which
// a broker would hold more partition replicas than the proposer's
// max_partition_replicas_per_node. It wraps ErrPartitionLimit.
type NodeReplicaLimitError struct {
	Topic  string
	Broker int32
	Total  int   // the broker's replicas had the command been applied
	Limit  int32 // the proposer's max_partition_replicas_per_node
}

func (e *NodeReplicaLimitError) Error() string {
	return fmt.Sprintf("metadata: topic %q: broker %d would hold %d partition replicas, more than max_partition_replicas_per_node (%d)",
		e.Topic, e.Broker, e.Total, e.Limit)
}
func (e *NodeReplicaLimitError) Unwrap() error { return ErrPartitionLimit }

// ReplicationFactorError is a replication factor below 1 or above the
// number of brokers available.
type ReplicationFactorError struct {
	ReplicationFactor int16
	Brokers           int
}

func (e *ReplicationFactorError) Error() string {
	return fmt.Sprintf("metadata: replication factor %d with %d brokers", e.ReplicationFactor, e.Brokers)
}
func (e *ReplicationFactorError) Unwrap() error { return ErrInvalidReplicationFactor }

// AssignmentError is a replica assignment that does not fit its topic. It
// wraps both ErrInvalidReplicaAssignment and Err, one of ErrPartitionCount,
// ErrReplicaCount, ErrDuplicateReplica or ErrUnknownBroker.
type AssignmentError struct {
	Partition int32 // index in the assignment; -1 for ErrPartitionCount
	Broker    int32 // the offending replica; -1 when none is
	Err       error
}

func (e *AssignmentError) Error() string {
	switch {
	case e.Partition < 0:
		return fmt.Sprintf("metadata: invalid replica assignment: %v", e.Err)
	case e.Broker < 0:
		return fmt.Sprintf("metadata: invalid replica assignment for partition %d: %v", e.Partition, e.Err)
	}
	return fmt.Sprintf("metadata: invalid replica assignment for partition %d, broker %d: %v", e.Partition, e.Broker, e.Err)
}
func (e *AssignmentError) Unwrap() []error { return []error{ErrInvalidReplicaAssignment, e.Err} }

// InvalidConfigError is a config entry that cannot be stored. It wraps
// ErrInvalidConfig and, when there is one, Err: the *topicconfig.Error
// (which wraps kerr.InvalidConfig).
type InvalidConfigError struct {
	Key    string
	Reason string // for people, not for matching
	Err    error  // may be nil
}

func (e *InvalidConfigError) Error() string {
	return fmt.Sprintf("metadata: config %q: %s", e.Key, e.Reason)
}

func (e *InvalidConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidConfig}
	}
	return []error{ErrInvalidConfig, e.Err}
}

// UnknownTopicError names a topic, or a partition of it, that does not exist.
type UnknownTopicError struct {
	Topic     string
	Partition int32 // -1 when the topic itself is unknown
}

func (e *UnknownTopicError) Error() string {
	if e.Partition < 0 {
		return fmt.Sprintf("metadata: unknown topic %q", e.Topic)
	}
	return fmt.Sprintf("metadata: topic %q has no partition %d", e.Topic, e.Partition)
}
func (e *UnknownTopicError) Unwrap() error { return ErrUnknownTopicOrPartition }

// LeaderReportError is a SetPartitionLeader that cannot be true. It wraps
// ErrInvalidLeader and Err, one of ErrNotReplica, ErrNegativeLeaderEpoch or
// ErrLeaderEpochConflict.
type LeaderReportError struct {
	Topic     string
	Partition int32
	Leader    int32
	Epoch     int32
	Err       error
}

func (e *LeaderReportError) Error() string {
	return fmt.Sprintf("metadata: %s/%d: leader %d epoch %d: %v", e.Topic, e.Partition, e.Leader, e.Epoch, e.Err)
}
func (e *LeaderReportError) Unwrap() []error { return []error{ErrInvalidLeader, e.Err} }

// DecodeError is bytes that do not decode. It wraps ErrMalformedCommand or
// ErrMalformedSnapshot.
type DecodeError struct {
	Offset int    // where in the input the problem was found
	Reason string // for people, not for matching
	Err    error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%v at byte %d: %s", e.Err, e.Offset, e.Reason)
}
func (e *DecodeError) Unwrap() error { return e.Err }

// UnknownCommandError is a command type or version this build cannot read.
type UnknownCommandError struct {
	Type    CommandType
	Version uint8
}

func (e *UnknownCommandError) Error() string {
	return fmt.Sprintf("metadata: unknown command type %d version %d", e.Type, e.Version)
}
func (e *UnknownCommandError) Unwrap() error { return ErrUnknownCommand }
