package metadata

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/minikafka/minikafka-go/topicconfig"
)

// Apply returns the state after cmd is applied as the log entry at index,
// with the command's result (named in each command's doc) or the error that
// rejected it. index is the entry's Raft log index: it becomes AppliedIndex
// and goes into the ids of topics the entry creates. A rejected command
// changes nothing but the applied index. Apply is pure: the same s, index and cmd always give the same outputs, and
// s itself is never modified.
//
// Besides the FSM, a proposer may call it on the current state to check a
// command before proposing it (CreateTopics with validate_only), passing
// AppliedIndex()+1.
func (s *Snapshot) Apply(index uint64, cmd Command) (next *Snapshot, result any, err error) {
	next = s.shallow()
	next.index = index
	if cmd, err = deref(cmd); err != nil {
		return next, nil, err
	}
	if _, ok := cmd.(InitCluster); !ok && !s.Initialized() {
		return next, nil, ErrClusterNotInitialized
	}
	// Each handler validates everything before it writes to next, so a
	// rejected command leaves no partial change.
	switch c := cmd.(type) {
	case InitCluster:
		result, err = next.initCluster(c)
	case RegisterBroker:
		result, err = next.registerBroker(c)
	case CreateTopic:
		result, err = next.createTopic(index, c)
	case SetPartitionLeader:
		result, err = next.setPartitionLeader(c)
	case SetPartitionLeaders:
		result, err = next.setPartitionLeaders(c)
	case AllocateProducerID:
		result, err = next.allocateProducerID(c)
	case CreatePartitions:
		result, err = next.createPartitions(c)
	case DeleteTopic:
		result, err = next.deleteTopic(c)
	case AlterConfigs:
		result, err = next.alterConfigs(c)
	case AlterScramCredentials:
		result, err = next.alterScram(c)
	case AlterReassignment:
		result, err = next.alterReassignment(c)
	case CompleteReassignment:
		result, err = next.completeReassignment(c)
	case CreateACLs:
		result, err = next.createACLs(c)
	case DeleteACLs:
		result, err = next.deleteACLs(c)
	case SetProducerIDKey:
		result, err = next.setProducerIDKey(c)
	case ReplicasRemoved:
		result, err = next.replicasRemoved(c)
	case SetFeatureLevels:
		result, err = next.setFeatureLevels(c)
	case CreateDelegationToken:
		result, err = next.createDelegationToken(c)
	case UpdateDelegationToken:
		result, err = next.updateDelegationToken(c)
	case ExpireDelegationTokens:
		result, err = next.expireDelegationTokens(c)
	case AlterClientQuotas:
		result, err = next.alterClientQuotas(c)
	}
	if err != nil {
		return next, nil, err
	}
	switch cmd.(type) {
	case SetPartitionLeader, SetPartitionLeaders, AllocateProducerID, SetProducerIDKey, AlterScramCredentials, CreateACLs, DeleteACLs,
		SetFeatureLevels, CreateDelegationToken, UpdateDelegationToken, ExpireDelegationTokens, AlterClientQuotas:
	default:
		next.layout = index
	}
	return next, result, nil
}

// LayoutIndex is the applied index of the last command that changed
// brokers, topics, partitions' replicas, reassignments or configs: what a
// node's set of replicas and their settings follow. A state decoded from
// a snapshot reports its own index. Leader reports, which come by the
// thousand after a fail-over, leave it alone.
func (s *Snapshot) LayoutIndex() uint64 { return s.layout }

// cloneMap copies m into a new, non-nil map with room for one more entry.
func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m)+1)
	maps.Copy(c, m)
	return c
}

func (s *Snapshot) initCluster(c InitCluster) (InitClusterResult, error) {
	switch {
	case c.ClusterID == "":
		return InitClusterResult{}, ErrInvalidClusterID
	case s.clusterID == c.ClusterID:
		return InitClusterResult{ClusterID: s.clusterID}, nil
	case s.clusterID != "":
		return InitClusterResult{}, &ClusterIDMismatchError{Have: s.clusterID, Proposed: c.ClusterID}
	}
	s.clusterID = c.ClusterID
	s.nextProducerID = FirstProducerID
	return InitClusterResult{ClusterID: c.ClusterID, Changed: true}, nil
}

func (s *Snapshot) registerBroker(c RegisterBroker) (RegisterBrokerResult, error) {
	if c.ID < 0 {
		return RegisterBrokerResult{}, &InvalidBrokerError{ID: c.ID, Reason: "negative id"}
	}
	for _, addr := range []string{c.KafkaAddr, c.RaftAddr} {
		if err := checkAddr(addr); err != nil {
			return RegisterBrokerResult{}, &InvalidBrokerError{ID: c.ID, Reason: err.Error()}
		}
	}
	if c.Listeners != "" {
		ls, err := ParseListeners(c.Listeners)
		if err != nil {
			return RegisterBrokerResult{}, &InvalidBrokerError{ID: c.ID, Reason: err.Error()}
		}
		c.Listeners = FormatListeners(ls)
	}
	b := Broker(c)
	if old, ok := s.brokers[c.ID]; ok && old == b {
		return RegisterBrokerResult{Broker: b}, nil
	}
	s.brokers = cloneMap(s.brokers)
	s.brokers[c.ID] = b
	return RegisterBrokerResult{Broker: b, Changed: true}, nil
}

func (s *Snapshot) createTopic(index uint64, c CreateTopic) (CreateTopicResult, error) {
	if err := s.checkCreateTopic(c); err != nil {
		return CreateTopicResult{}, err
	}
	t := &Topic{Name: c.Name, ID: s.newTopicID(index, c.Name), Partitions: make([]Partition, len(c.Assignment))}
	for i, replicas := range c.Assignment {
		t.Partitions[i] = Partition{Replicas: slices.Clone(replicas), Leader: NoLeader, LeaderEpoch: NoLeaderEpoch}
	}
	if len(c.Configs) > 0 {
		t.Configs = maps.Clone(c.Configs)
	}
	s.topics = cloneMap(s.topics)
	s.topics[t.Name] = t
	s.topicIDs = cloneMap(s.topicIDs)
	s.topicIDs[t.ID] = t.Name
	return CreateTopicResult{Topic: t.clone()}, nil
}

// checkReplicas checks the replica lists of partitions first, first+1,
// ...: rf distinct registered brokers each.
func (s *Snapshot) checkReplicas(assignment [][]int32, rf int, first int32) error {
	for i, replicas := range assignment {
		p := first + int32(i)
		if len(replicas) != rf {
			return &AssignmentError{Partition: p, Broker: -1, Err: ErrReplicaCount}
		}
		for j, b := range replicas {
			if _, ok := s.brokers[b]; !ok {
				return &AssignmentError{Partition: p, Broker: b, Err: ErrUnknownBroker}
			}
			if slices.Contains(replicas[:j], b) {
				return &AssignmentError{Partition: p, Broker: b, Err: ErrDuplicateReplica}
			}
		}
	}
	return nil
}

// createPartitions grows a topic; see CreatePartitions for the checks,
// made in a fixed order so that every replica reports the same first
// error.
func (s *Snapshot) createPartitions(c CreatePartitions) (CreatePartitionsResult, error) {
	old, ok := s.topics[c.Topic]
	if !ok {
		return CreatePartitionsResult{}, &UnknownTopicError{Topic: c.Topic, Partition: -1}
	}
	have := int32(len(old.Partitions))
	if c.Count <= have || c.Count > MaxPartitions {
		return CreatePartitionsResult{}, &InvalidPartitionsError{Partitions: c.Count}
	}
	if err := s.CheckPartitionLimit(c.Topic, int(c.Count-have), c.MaxClusterPartitions); err != nil {
		return CreatePartitionsResult{}, err
	}
	if err := s.CheckNodeReplicaLimit(c.Topic, c.Assignment, c.MaxNodeReplicas); err != nil {
		return CreatePartitionsResult{}, err
	}
	if len(c.Assignment) != int(c.Count-have) {
		return CreatePartitionsResult{}, &AssignmentError{Partition: -1, Broker: -1, Err: ErrPartitionCount}
	}
	if err := s.checkReplicas(c.Assignment, len(s.targetReplicas(c.Topic, old, 0)), have); err != nil {
		return CreatePartitionsResult{}, err
	}
	t := old.clone()
	for _, replicas := range c.Assignment {
		t.Partitions = append(t.Partitions, Partition{Replicas: slices.Clone(replicas), Leader: NoLeader, LeaderEpoch: NoLeaderEpoch})
	}
	s.topics = cloneMap(s.topics)
	s.topics[t.Name] = &t
	return CreatePartitionsResult{Topic: t.clone()}, nil
}

// deleteTopic removes a topic and remembers its id as deleted (deleted.go).
func (s *Snapshot) deleteTopic(c DeleteTopic) (DeleteTopicResult, error) {
	t, ok := s.topics[c.Name]
	switch {
	case !ok:
		return DeleteTopicResult{}, &UnknownTopicError{Topic: c.Name, Partition: -1}
	case IsInternal(c.Name):
		return DeleteTopicResult{}, &InvalidTopicError{Name: c.Name, Reason: "internal topics cannot be deleted"}
	}
	s.topics = cloneMap(s.topics)
	delete(s.topics, c.Name)
	s.topicIDs = cloneMap(s.topicIDs)
	delete(s.topicIDs, t.ID)
	var at uint64 // a version 1 delete counts as older than all others
	if !c.legacy {
		at = s.index
	}
	s.forgetDeleted()
	s.deleted = s.deleted.with(t.ID, deletedTopic{at: at})
	s.dropReassignments(c.Name)
	return DeleteTopicResult{ID: t.ID}, nil
}

// checkCreateTopic validates in a fixed order, so every replica reports the
// same first error.
func (s *Snapshot) checkCreateTopic(c CreateTopic) error {
	if err := ValidateTopicName(c.Name); err != nil {
		return err
	}
	if _, ok := s.topics[c.Name]; ok {
		return &TopicExistsError{Name: c.Name}
	}
	if c.Partitions < 1 || c.Partitions > MaxPartitions {
		return &InvalidPartitionsError{Partitions: c.Partitions}
	}
	if err := s.CheckPartitionLimit(c.Name, int(c.Partitions), c.MaxClusterPartitions); err != nil {
		return err
	}
	if err := s.CheckNodeReplicaLimit(c.Name, c.Assignment, c.MaxNodeReplicas); err != nil {
		return err
	}
	if c.ReplicationFactor < 1 || int(c.ReplicationFactor) > len(s.brokers) {
		return &ReplicationFactorError{ReplicationFactor: c.ReplicationFactor, Brokers: len(s.brokers)}
	}
	if len(c.Assignment) != int(c.Partitions) {
		return &AssignmentError{Partition: -1, Broker: -1, Err: ErrPartitionCount}
	}
	if err := s.checkReplicas(c.Assignment, int(c.ReplicationFactor), 0); err != nil {
		return err
	}
	if _, ok := c.Configs[""]; ok {
		return &InvalidConfigError{Key: "", Reason: "empty key"}
	}
	if !c.legacyConfigs {
		if err := topicconfig.ValidateAll(c.Configs); err != nil {
			return invalidConfig(err)
		}
	}
	return nil
}

// CheckPartitionLimit refuses adding n partitions to topic when the
// cluster would then hold more than limit partitions, with a
// *PartitionLimitError. Internal topics and a limit of 0 pass. Apply checks
// it for CreateTopic and CreatePartitions with the limit they carry; a
// proposer may call it to refuse early.
func (s *Snapshot) CheckPartitionLimit(topic string, n int, limit int32) error {
	if limit <= 0 || IsInternal(topic) {
		return nil
	}
	if total := s.PartitionCount() + n; total > int(limit) {
		return &PartitionLimitError{Topic: topic, Total: total, Limit: limit}
	}
	return nil
}

// CheckNodeReplicaLimit refuses a topic's new partitions, placed as in
// assignment, when a broker would then hold more than limit partition
// replicas, with a *NodeReplicaLimitError naming the fullest such broker.
// Internal topics and a limit of 0 pass; the replicas of internal topics
// count like any others.
func (s *Snapshot) CheckNodeReplicaLimit(topic string, assignment [][]int32, limit int32) error {
	if limit <= 0 || IsInternal(topic) {
		return nil
	}
	adding := map[int32]int{}
	for _, replicas := range assignment {
		for _, b := range replicas {
			adding[b]++
		}
	}
	held := s.ReplicasPerBroker()
	worst, total := int32(-1), 0
	for b, n := range adding {
		if t := held[b] + n; t > int(limit) && (t > total || t == total && b < worst) {
			worst, total = b, t
		}
	}
	if worst >= 0 {
		return &NodeReplicaLimitError{Topic: topic, Broker: worst, Total: total, Limit: limit}
	}
	return nil
}

// invalidConfig wraps a topicconfig error as an *InvalidConfigError.
func invalidConfig(err error) error {
	var e *topicconfig.Error
	if errors.As(err, &e) {
		return &InvalidConfigError{Key: e.Name, Reason: e.Error(), Err: err}
	}
	return &InvalidConfigError{Reason: err.Error(), Err: err}
}

// alterConfigs replaces a topic's overrides or the cluster defaults.
func (s *Snapshot) alterConfigs(c AlterConfigs) (AlterConfigsResult, error) {
	var configs map[string]string
	if len(c.Configs) > 0 {
		configs = maps.Clone(c.Configs)
	}
	switch c.Resource {
	case ConfigTopic:
		old, ok := s.topics[c.Topic]
		if !ok {
			return AlterConfigsResult{}, &UnknownTopicError{Topic: c.Topic, Partition: -1}
		}
		if err := topicconfig.ValidateAll(configs); err != nil {
			return AlterConfigsResult{}, invalidConfig(err)
		}
		t := *old // Partitions are shared: never written
		t.Configs = configs
		s.topics = cloneMap(s.topics)
		s.topics[c.Topic] = &t
	case ConfigClusterDefaults:
		if c.Topic != "" {
			return AlterConfigsResult{}, &InvalidConfigError{Reason: "cluster defaults take no topic name"}
		}
		if err := topicconfig.ValidateBrokerAll(configs); err != nil {
			return AlterConfigsResult{}, invalidConfig(err)
		}
		s.clusterConfigs = configs
	default:
		return AlterConfigsResult{}, &InvalidConfigError{Reason: fmt.Sprintf("unknown config resource %d", c.Resource)}
	}
	return AlterConfigsResult{Configs: maps.Clone(configs)}, nil
}

func (s *Snapshot) setPartitionLeader(c SetPartitionLeader) (SetPartitionLeaderResult, error) {
	res, err := s.checkLeaderReport(c)
	if err == nil && res.Applied {
		(&leaderWriter{s: s}).set(c)
	}
	return res, err
}

// checkLeaderReport returns what SetPartitionLeader c answers, without
// applying it: Applied says that it changes the partition's leader.
func (s *Snapshot) checkLeaderReport(c SetPartitionLeader) (SetPartitionLeaderResult, error) {
	t, ok := s.topics[c.Topic]
	if !ok {
		return SetPartitionLeaderResult{}, &UnknownTopicError{Topic: c.Topic, Partition: -1}
	}
	if c.Partition < 0 || int(c.Partition) >= len(t.Partitions) {
		return SetPartitionLeaderResult{}, &UnknownTopicError{Topic: c.Topic, Partition: c.Partition}
	}
	reject := func(reason error) (SetPartitionLeaderResult, error) {
		return SetPartitionLeaderResult{}, &LeaderReportError{Topic: c.Topic, Partition: c.Partition, Leader: c.Leader, Epoch: c.Epoch, Err: reason}
	}
	p := t.Partitions[c.Partition]
	stored := SetPartitionLeaderResult{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch}
	switch {
	case c.Epoch < 0:
		return reject(ErrNegativeLeaderEpoch)
	case !slices.Contains(p.Replicas, c.Leader):
		return reject(ErrNotReplica)
	case c.Epoch < p.LeaderEpoch:
		return stored, nil // stale: a newer leader already reported
	case c.Epoch == p.LeaderEpoch && c.Leader == p.Leader:
		return stored, nil // a retried report
	case c.Epoch == p.LeaderEpoch:
		return reject(ErrLeaderEpochConflict)
	}
	return SetPartitionLeaderResult{Leader: c.Leader, LeaderEpoch: c.Epoch, Applied: true}, nil
}

func (s *Snapshot) allocateProducerID(c AllocateProducerID) (ProducerIdentity, error) {
	if c.TransactionalID == nil {
		return s.newProducerID()
	}
	tid := *c.TransactionalID
	if tid == "" {
		return ProducerIdentity{}, ErrInvalidTransactionalID
	}
	p, ok := s.transactional[tid]
	switch {
	case ok && p.Epoch < MaxProducerEpoch:
		p.Epoch++ // fences the producer that holds the previous epoch
	default: // first use, or the epoch is exhausted
		var err error
		if p, err = s.newProducerID(); err != nil {
			return ProducerIdentity{}, err
		}
	}
	s.transactional = cloneMap(s.transactional)
	s.transactional[tid] = p
	return p, nil
}

// newProducerID hands out the next id at epoch 0: the counter's, through
// the keyed permutation once there is a key (producerid.go). The counter
// stops below ProducerIDKeyedBase, so ids before and after the key never
// collide and it cannot wrap.
func (s *Snapshot) newProducerID() (ProducerIdentity, error) {
	if s.nextProducerID >= ProducerIDKeyedBase-1 {
		return ProducerIdentity{}, ErrProducerIDsExhausted
	}
	p := ProducerIdentity{ProducerID: s.producerIDAt(s.nextProducerID)}
	s.nextProducerID++
	return p, nil
}
