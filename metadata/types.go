package metadata

import (
	"encoding/base64"
	"fmt"
	"maps"
	"math"
	"slices"
	"unicode/utf16"
)

// Limits and special values.
const (
	// NoLeader is the Leader of a partition whose Raft group has not yet
	// reported a leader. Kafka clients read it as LEADER_NOT_AVAILABLE.
	NoLeader int32 = -1
	// NoLeaderEpoch is the LeaderEpoch that goes with NoLeader.
	NoLeaderEpoch int32 = -1
	// MaxPartitions bounds the partitions of one topic, so that a request
	// cannot make the proposer or the log hold an absurd assignment.
	MaxPartitions int32 = 1 << 16
	// FirstProducerID is the first producer id handed out; lower ids are left
	// free for tools and tests that pick their own.
	FirstProducerID int64 = 1000
	// MaxProducerEpoch is the last epoch a transactional id reaches before
	// its next InitProducerId gets a fresh producer id at epoch 0.
	MaxProducerEpoch int16 = 1<<15 - 1
)

// Broker is a node registered through the log.
type Broker struct {
	ID        int32
	KafkaAddr string // host:port that Kafka clients connect to
	RaftAddr  string // host:port of the node's Raft transport
	// Listeners are the advertised Kafka listeners, NAME://host:port,...
	// sorted by name (see ParseListeners); "" when the broker registered
	// only KafkaAddr.
	Listeners string
}

// Partition is one partition of a topic; its number is its index in
// Topic.Partitions.
type Partition struct {
	// Replicas are the brokers holding the partition's Raft group; the
	// first is the preferred leader. Fixed at creation.
	Replicas []int32
	// Leader is the last leader the partition's group reported, or NoLeader.
	Leader int32
	// LeaderEpoch is the Raft term in which Leader won, or NoLeaderEpoch.
	LeaderEpoch int32
}

// Topic is a topic and its partitions.
type Topic struct {
	Name       string
	ID         TopicID
	Partitions []Partition
	// Configs are the topic-level overrides given at creation (for example
	// "segment.bytes"). Keys are non-empty; values are not interpreted here.
	Configs map[string]string
}

// clone returns a deep copy, so readers cannot reach the FSM's memory.
func (t *Topic) clone() Topic {
	c := Topic{Name: t.Name, ID: t.ID, Partitions: make([]Partition, len(t.Partitions))}
	for i, p := range t.Partitions {
		c.Partitions[i] = Partition{Replicas: slices.Clone(p.Replicas), Leader: p.Leader, LeaderEpoch: p.LeaderEpoch}
	}
	if len(t.Configs) > 0 {
		c.Configs = maps.Clone(t.Configs)
	}
	return c
}

func (t *Topic) equal(o *Topic) bool {
	if t.Name != o.Name || t.ID != o.ID || len(t.Partitions) != len(o.Partitions) ||
		!maps.Equal(t.Configs, o.Configs) {
		return false
	}
	for i, p := range t.Partitions {
		q := o.Partitions[i]
		if p.Leader != q.Leader || p.LeaderEpoch != q.LeaderEpoch || !slices.Equal(p.Replicas, q.Replicas) {
			return false
		}
	}
	return true
}

// TopicID is a topic's 16-byte UUID, as Kafka Metadata v10+ and Fetch v13+
// carry it. IDs are derived from the cluster id, the creating log index and
// the name (see CreateTopic), so every replica computes the same one.
type TopicID [16]byte

// String is Kafka's text form: URL-safe base64 without padding.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseTopicID reads String's form back.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("metadata: topic id %q is not 16 bytes of URL-safe base64", s)
	}
	copy(id[:], b)
	return id, nil
}

// IsZero reports whether id is the all-zero UUID, which Kafka uses for
// "no topic id".
func (id TopicID) IsZero() bool { return id == TopicID{} }

// ProducerIdentity is a producer id and epoch, the answer to InitProducerId.
type ProducerIdentity struct {
	ProducerID int64
	Epoch      int16
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ConsumerOffsetsTopic is the internal topic of committed offsets and
// consumer-group metadata. Its partitions are Raft groups like any other;
// the leader of partition GroupPartition(group) coordinates the group.
const ConsumerOffsetsTopic = "__consumer_offsets"

// TransactionStateTopic is the internal topic of transaction metadata. Its
// partitions are Raft groups like any other; the leader of partition
// TxnPartition(transactionalID) coordinates the transactional id.
const TransactionStateTopic = "__transaction_state"

// ShareGroupStateTopic is the internal topic of KIP-932 share-partition
// state: the latest snapshot of each (group, topic, partition), written
// by the data partition's leader through the partition its key hashes to.
const ShareGroupStateTopic = "__share_group_state"

// IsInternal reports whether a topic is one the cluster keeps for itself:
// clients may read it but not produce to it, create it or see it listed
// unless they ask.
func IsInternal(name string) bool {
	return name == ConsumerOffsetsTopic || name == TransactionStateTopic || name == ShareGroupStateTopic
}

// TxnPartition is the partition of TransactionStateTopic (of n) that holds
// a transactional id's metadata: Kafka's abs(id.hashCode()) % n, the same
// hash as GroupPartition, so that tools that compute it agree.
func TxnPartition(transactionalID string, n int32) int32 {
	return GroupPartition(transactionalID, n)
}

// GroupPartition is the partition of ConsumerOffsetsTopic (of n) that holds
// group's offsets and metadata: Kafka's abs(group.hashCode()) % n, with
// Java's String.hashCode over UTF-16 code units, so that tools that compute
// it find the same partition.
func GroupPartition(group string, n int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == math.MinInt32 { // Kafka's Utils.abs maps it to 0
		h = 0
	}
	if h < 0 {
		h = -h
	}
	return h % n
}
