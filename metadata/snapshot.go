package metadata

import (
	"bytes"
	"maps"
	"slices"

	"github.com/minikafka/minikafka-go/acl"
)

// Snapshot is the metadata state after some log index. A *Snapshot is
// immutable: Apply returns a new one and leaves the old untouched (maps are
// copied on write), so readers may hold and share one without locks, and
// Raft may persist one while newer entries are applied. Accessors return
// copies; outputs that list things are sorted, never in map order. The zero
// Snapshot is the state before the first entry.
type Snapshot struct {
	index uint64
	// layout is the index of the last change to anything but partition
	// leaders, producer ids, SCRAM credentials, ACLs, delegation tokens and
	// client quotas (LayoutIndex).
	layout    uint64
	clusterID string
	brokers   map[int32]Broker
	// topics values are never modified once the Snapshot is published;
	// Apply replaces a changed topic with a new *Topic.
	topics         map[string]*Topic
	topicIDs       map[TopicID]string // inverse of topics[name].ID
	nextProducerID int64
	transactional  map[string]ProducerIdentity
	// deleted are the deleted topics whose replicas some registered
	// broker may still hold (deleted.go).
	deleted deletedSet
	// clusterConfigs are the cluster-wide dynamic broker defaults
	// (AlterConfigs with ConfigClusterDefaults); nil when none.
	clusterConfigs map[string]string
	// scram are the SCRAM credentials (AlterScramCredentials); nil when
	// none.
	scram map[scramKey]ScramCredential
	// reassign are the partition moves in progress (reassign.go); nil
	// when none.
	reassign map[TopicPartition]Reassignment
	// acls are the ACL bindings (CreateACLs, DeleteACLs).
	acls acl.Set
	// tokens are the delegation tokens by id (dtoken.go); nil when none.
	tokens map[string]DelegationToken
	// producerIDKey keys the permutation of producer ids (producerid.go);
	// nil until SetProducerIDKey.
	producerIDKey []byte
	// features are the feature levels SetFeatureLevels set (features.go);
	// nil when none.
	features map[string]int16
	// quotas are the client quotas by entity (quota.go); nil when none.
	quotas map[QuotaEntity]map[string]float64
}

// ClusterConfigs returns a copy of the cluster-wide dynamic broker
// defaults, by broker config name; nil when none is set.
func (s *Snapshot) ClusterConfigs() map[string]string {
	if len(s.clusterConfigs) == 0 {
		return nil
	}
	return maps.Clone(s.clusterConfigs)
}

// AppliedIndex is the log index of the last entry applied, 0 before any.
func (s *Snapshot) AppliedIndex() uint64 { return s.index }

// ClusterID is the id set by InitCluster, "" before it.
func (s *Snapshot) ClusterID() string { return s.clusterID }

// Initialized reports whether InitCluster has been applied.
func (s *Snapshot) Initialized() bool { return s.clusterID != "" }

// Broker returns a registered broker.
func (s *Snapshot) Broker(id int32) (Broker, bool) {
	b, ok := s.brokers[id]
	return b, ok
}

// Brokers returns every registered broker, sorted by id.
func (s *Snapshot) Brokers() []Broker {
	out := make([]Broker, 0, len(s.brokers))
	for _, id := range s.BrokerIDs() {
		out = append(out, s.brokers[id])
	}
	return out
}

// BrokerIDs returns the registered broker ids, sorted.
func (s *Snapshot) BrokerIDs() []int32 { return sortedKeys(s.brokers) }

// Topic returns a copy of a topic.
func (s *Snapshot) Topic(name string) (Topic, bool) {
	t, ok := s.topics[name]
	if !ok {
		return Topic{}, false
	}
	return t.clone(), true
}

// TopicID returns a topic's id without copying the topic: for callers
// that look up one partition at a time, where a copy of a topic of
// thousands of partitions per call would dominate their cost.
func (s *Snapshot) TopicID(name string) (TopicID, bool) {
	t, ok := s.topics[name]
	if !ok {
		return TopicID{}, false
	}
	return t.ID, true
}

// TopicPartitions returns how many partitions a topic has, without
// copying it (group and transaction requests map their key to a partition
// of an internal topic on every request).
func (s *Snapshot) TopicPartitions(name string) (int32, bool) {
	t, ok := s.topics[name]
	if !ok {
		return 0, false
	}
	return int32(len(t.Partitions)), true
}

// TopicLed reports whether a topic exists and every partition of it has
// reported a leader, without copying it (CreateTopics waits for this,
// checking on every metadata change).
func (s *Snapshot) TopicLed(name string) bool {
	t, ok := s.topics[name]
	if !ok {
		return false
	}
	for _, p := range t.Partitions {
		if p.Leader < 0 {
			return false
		}
	}
	return true
}

// TopicConfigs returns a copy of a topic's configs (nil if it has none or
// does not exist), without copying its partitions.
func (s *Snapshot) TopicConfigs(name string) map[string]string {
	t, ok := s.topics[name]
	if !ok || len(t.Configs) == 0 {
		return nil
	}
	return maps.Clone(t.Configs)
}

// TopicNameByID returns the name of the topic with that id.
func (s *Snapshot) TopicNameByID(id TopicID) (string, bool) {
	name, ok := s.topicIDs[id]
	return name, ok
}

// TopicByID returns a copy of the topic with that id.
func (s *Snapshot) TopicByID(id TopicID) (Topic, bool) {
	name, ok := s.topicIDs[id]
	if !ok {
		return Topic{}, false
	}
	return s.Topic(name)
}

// TopicNames returns the topic names, sorted.
func (s *Snapshot) TopicNames() []string { return sortedKeys(s.topics) }

// Topics returns copies of every topic, sorted by name.
func (s *Snapshot) Topics() []Topic {
	out := make([]Topic, 0, len(s.topics))
	for _, name := range s.TopicNames() {
		out = append(out, s.topics[name].clone())
	}
	return out
}

// PartitionCount is the number of partitions of all topics.
func (s *Snapshot) PartitionCount() int {
	n := 0
	for _, t := range s.topics {
		n += len(t.Partitions)
	}
	return n
}

// ReplicasPerBroker counts the partition replicas each broker holds, over
// every topic.
func (s *Snapshot) ReplicasPerBroker() map[int32]int {
	out := map[int32]int{}
	for _, t := range s.topics {
		for _, p := range t.Partitions {
			for _, b := range p.Replicas {
				out[b]++
			}
		}
	}
	return out
}

// Partition returns a copy of one partition.
func (s *Snapshot) Partition(topic string, partition int32) (Partition, bool) {
	t, ok := s.topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return Partition{}, false
	}
	p := t.Partitions[partition]
	p.Replicas = slices.Clone(p.Replicas)
	return p, true
}

// PartitionsOn returns the partitions that have broker among their
// replicas, sorted by topic then partition: the Raft groups that node must
// run.
func (s *Snapshot) PartitionsOn(broker int32) []TopicPartition {
	var out []TopicPartition
	for _, name := range s.TopicNames() {
		for i, p := range s.topics[name].Partitions {
			if slices.Contains(p.Replicas, broker) {
				out = append(out, TopicPartition{Topic: name, Partition: int32(i)})
			}
		}
	}
	return out
}

// NextProducerID is the producer-id counter: FirstProducerID once
// initialized, 0 before, one more for each new producer id. It is the next
// id itself only while the cluster has no producer-id key.
func (s *Snapshot) NextProducerID() int64 { return s.nextProducerID }

// TransactionalProducer returns the id and epoch last given to a
// transactional id.
func (s *Snapshot) TransactionalProducer(transactionalID string) (ProducerIdentity, bool) {
	p, ok := s.transactional[transactionalID]
	return p, ok
}

// Load counts, per broker, the replicas and preferred leaderships (first
// replicas) of every topic: the input Place balances against.
func (s *Snapshot) Load() Load {
	l := make(Load, len(s.brokers))
	for _, t := range s.topics {
		for _, p := range t.Partitions {
			for i, b := range p.Replicas {
				bl := l[b]
				bl.Replicas++
				if i == 0 {
					bl.Leaders++
				}
				l[b] = bl
			}
		}
	}
	return l
}

// Equal reports whether two snapshots hold the same state, applied index
// included.
func (s *Snapshot) Equal(o *Snapshot) bool {
	if s == o {
		return true
	}
	if s == nil || o == nil {
		return false
	}
	return s.index == o.index && s.clusterID == o.clusterID && s.nextProducerID == o.nextProducerID &&
		bytes.Equal(s.producerIDKey, o.producerIDKey) &&
		maps.Equal(s.brokers, o.brokers) && maps.Equal(s.transactional, o.transactional) &&
		maps.Equal(s.topicIDs, o.topicIDs) && s.deleted.equal(o.deleted) &&
		maps.Equal(s.clusterConfigs, o.clusterConfigs) &&
		maps.EqualFunc(s.scram, o.scram, ScramCredential.equal) && s.acls.Equal(o.acls) &&
		maps.EqualFunc(s.reassign, o.reassign, Reassignment.equal) && featuresEqual(s.features, o.features) &&
		maps.EqualFunc(s.tokens, o.tokens, DelegationToken.equal) && quotasEqual(s.quotas, o.quotas) &&
		maps.EqualFunc(s.topics, o.topics, func(a, b *Topic) bool { return a.equal(b) })
}

// shallow returns a copy that shares every map with s; Apply replaces a
// shared map with a clone before changing it.
func (s *Snapshot) shallow() *Snapshot {
	c := *s
	return &c
}
