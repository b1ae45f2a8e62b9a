package metadata

// CommandType is the first byte of an encoded command. Values are never
// reused or reordered: new commands are appended at the end.
type CommandType uint8

// Command types. Zero is reserved so that a zeroed buffer never decodes.
const (
	TypeInitCluster        CommandType = 1
	TypeRegisterBroker     CommandType = 2
	TypeCreateTopic        CommandType = 3
	TypeSetPartitionLeader CommandType = 4
	TypeAllocateProducerID CommandType = 5
	TypeCreatePartitions   CommandType = 6
	TypeDeleteTopic        CommandType = 7
	TypeAlterConfigs       CommandType = 8
	// TypeAlterScramCredentials is in scram.go.
	TypeAlterScramCredentials CommandType = 9
	// TypeCreateACLs and TypeDeleteACLs are in acls.go.
	TypeCreateACLs CommandType = 10
	TypeDeleteACLs CommandType = 11
	// TypeAlterReassignment and TypeCompleteReassignment are in reassign.go.
	TypeAlterReassignment    CommandType = 12
	TypeCompleteReassignment CommandType = 13
	// TypeSetProducerIDKey is in producerid.go.
	// TypeReplicasRemoved is in deleted.go.
	// TypeSetPartitionLeaders is in leaders.go.
	// TypeSetFeatureLevels is in features.go.
	// The delegation token types are in dtoken.go.
	// TypeAlterClientQuotas is in quota.go.
)

func (t CommandType) String() string {
	switch t {
	case TypeInitCluster:
		return "InitCluster"
	case TypeRegisterBroker:
		return "RegisterBroker"
	case TypeCreateTopic:
		return "CreateTopic"
	case TypeSetPartitionLeader:
		return "SetPartitionLeader"
	case TypeAllocateProducerID:
		return "AllocateProducerID"
	case TypeCreatePartitions:
		return "CreatePartitions"
	case TypeDeleteTopic:
		return "DeleteTopic"
	case TypeAlterConfigs:
		return "AlterConfigs"
	case TypeAlterScramCredentials:
		return "AlterScramCredentials"
	case TypeAlterReassignment:
		return "AlterReassignment"
	case TypeCompleteReassignment:
		return "CompleteReassignment"
	case TypeCreateACLs:
		return "CreateACLs"
	case TypeDeleteACLs:
		return "DeleteACLs"
	case TypeSetProducerIDKey:
		return "SetProducerIDKey"
	case TypeReplicasRemoved:
		return "ReplicasRemoved"
	case TypeSetPartitionLeaders:
		return "SetPartitionLeaders"
	case TypeSetFeatureLevels:
		return "SetFeatureLevels"
	case TypeCreateDelegationToken:
		return "CreateDelegationToken"
	case TypeUpdateDelegationToken:
		return "UpdateDelegationToken"
	case TypeExpireDelegationTokens:
		return "ExpireDelegationTokens"
	case TypeAlterClientQuotas:
		return "AlterClientQuotas"
	}
	return "Unknown"
}

// Command is one entry of the metadata log. The set is closed: the
// implementations are the value types of this file. Pass them by value.
type Command interface {
	Type() CommandType
	// appendBody appends the encoding of the command's fields for the
	// current version of its type.
	appendBody(b []byte) []byte
}

var (
	_ Command = InitCluster{}
	_ Command = RegisterBroker{}
	_ Command = CreateTopic{}
	_ Command = SetPartitionLeader{}
	_ Command = AllocateProducerID{}
	_ Command = AlterConfigs{}
	_ Command = AlterScramCredentials{}
	_ Command = AlterReassignment{}
	_ Command = CompleteReassignment{}
	_ Command = CreateACLs{}
	_ Command = DeleteACLs{}
	_ Command = SetProducerIDKey{}
	_ Command = ReplicasRemoved{}
	_ Command = SetPartitionLeaders{}
	_ Command = SetFeatureLevels{}
	_ Command = CreateDelegationToken{}
	_ Command = UpdateDelegationToken{}
	_ Command = ExpireDelegationTokens{}
	_ Command = AlterClientQuotas{}
)

// InitCluster sets the cluster id. It must be the first command of the log:
// every other command fails with ErrClusterNotInitialized until it is
// applied. Repeating it with the same id is a no-op, so every bootstrapping
// node may propose it.
//
// Result: InitClusterResult.
type InitCluster struct {
	ClusterID string
}

// InitClusterResult answers InitCluster.
type InitClusterResult struct {
	ClusterID string
	Changed   bool // false when the id was already set to the same value
}

// RegisterBroker adds a broker, or updates its addresses when the id is
// known (a node that restarts on another address registers again).
//
// Result: RegisterBrokerResult.
type RegisterBroker struct {
	ID        int32  // >= 0
	KafkaAddr string // host:port, host non-empty, port 1..65535
	RaftAddr  string // host:port, same rules
	// Listeners are the broker's advertised Kafka listeners in Kafka's
	// advertised.listeners form, NAME://host:port,... (see
	// ParseListeners); "" for a broker with only KafkaAddr. A
	// registration without listeners is encoded as version 1, which
	// older builds read.
	Listeners string
}

// RegisterBrokerResult answers RegisterBroker.
type RegisterBrokerResult struct {
	Broker  Broker
	Changed bool // false when the same registration was already stored
}

// CreateTopic creates a topic with a replica assignment computed by the
// proposer, normally with Place over the live brokers. Apply checks it again
// against the state at its log position: valid and free name, 1..MaxPartitions
// partitions, at most MaxClusterPartitions in the cluster afterwards (unless
// internal), 1..len(brokers) replication factor, one replica list per
// partition of exactly ReplicationFactor distinct registered brokers, and
// configs that topicconfig.ValidateAll accepts (entries of encoding
// version 1, written before configs were interpreted, need only non-empty
// keys). Every partition starts with NoLeader.
//
// The topic id is derived from the cluster id, the entry's log index and
// the name, so it is known only once applied.
//
// Result: CreateTopicResult.
type CreateTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Assignment        [][]int32         // [partition] -> replicas, first = preferred leader
	Configs           map[string]string // optional topic-level configs
	// MaxClusterPartitions is the proposer's max_partitions: Apply refuses
	// the topic if the cluster would then hold more partitions (internal
	// topics are exempt). Stamped on the entry, so that every replica
	// checks the same limit against the state at the entry's position,
	// where concurrent proposals are ordered. 0: no limit (entries of
	// encoding versions 1 and 2, written before the limit was checked
	// there); a limit is encoded as version 3.
	MaxClusterPartitions int32
	// MaxNodeReplicas is the proposer's max_partition_replicas_per_node:
	// Apply refuses the topic if a broker would then hold more partition
	// replicas (of any topic; internal topics are never refused). 0: no
	// limit. Stamped and encoded with MaxClusterPartitions.
	MaxNodeReplicas int32

	// legacyConfigs marks an entry of encoding version 1, whose configs
	// are checked as they were then: non-empty keys only.
	legacyConfigs bool
}

// CreateTopicResult answers CreateTopic with the stored topic.
type CreateTopicResult struct {
	Topic Topic
}

// CreatePartitions grows a topic to Count partitions (Kafka's
// CreatePartitions). Assignment lists the replicas of each new partition,
// computed by the proposer, normally with Place over the live brokers.
// Apply checks it against the state at its log position: the topic exists,
// Count is above its partition count and at most MaxPartitions, the
// cluster holds at most MaxClusterPartitions afterwards, and each new
// partition has as many distinct registered brokers as the topic's
// replication factor. New partitions start with NoLeader.
//
// Result: CreatePartitionsResult.
type CreatePartitions struct {
	Topic      string
	Count      int32
	Assignment [][]int32 // [new partition] -> replicas, first = preferred leader
	// MaxClusterPartitions and MaxNodeReplicas are the proposer's limits,
	// as in CreateTopic; both 0: no limit (encoding version 1), else
	// version 2.
	MaxClusterPartitions int32
	MaxNodeReplicas      int32
}

// CreatePartitionsResult answers CreatePartitions with the grown topic.
type CreatePartitionsResult struct {
	Topic Topic
}

// DeleteTopic deletes a topic (Kafka's DeleteTopics). Its id is remembered
// as deleted, so that every node, also one that was down at the time,
// removes its replicas of that id once it learns of it, and never mistakes
// a replica of a deleted topic for one it has yet to learn about, until
// every registered broker has reported its replicas removed
// (ReplicasRemoved; at most MaxDeletedTopics are kept). The name is free
// again at once; a new topic of that name gets a new id. The internal
// topic cannot be deleted.
//
// Encoding version 2 has the fields of version 1; it marks a delete whose
// entry index orders it among the kept ids. Version 1 deletes, written
// before, count as older than all others.
//
// Result: DeleteTopicResult.
type DeleteTopic struct {
	Name string

	legacy bool // an entry of encoding version 1
}

// DeleteTopicResult answers DeleteTopic with the deleted topic's id.
type DeleteTopicResult struct {
	ID TopicID
}

// SetPartitionLeader records the leader a partition's Raft group elected,
// reported by that leader. Reports with an epoch lower than the stored one
// are stale and ignored (Applied is false, and the stored leader comes
// back); a repeat of the stored leader and epoch is ignored the same way.
//
// Result: SetPartitionLeaderResult.
type SetPartitionLeader struct {
	Topic     string
	Partition int32
	Leader    int32
	Epoch     int32 // the Raft term of the partition group's leader
}

// SetPartitionLeaderResult answers SetPartitionLeader with the partition's
// leader after the command.
type SetPartitionLeaderResult struct {
	Leader      int32
	LeaderEpoch int32
	Applied     bool // false for a stale or repeated report
}

// AllocateProducerID hands out a producer id for InitProducerId.
//
// Without a transactional id: a new id, epoch 0. With one: the first time,
// a new id at epoch 0; each later time, the same id with epoch+1, which
// fences the older producer; after MaxProducerEpoch, a new id at epoch 0.
// Ids increase from FirstProducerID and are never reused.
//
// Result: ProducerIdentity.
type AllocateProducerID struct {
	TransactionalID *string // nil for an idempotent, non-transactional producer
}

// ConfigResource names what AlterConfigs changes.
type ConfigResource uint8

// Config resources. Zero is reserved.
const (
	// ConfigTopic is one topic's overrides (Kafka's TOPIC resource).
	ConfigTopic ConfigResource = 1
	// ConfigClusterDefaults are the cluster-wide dynamic broker configs
	// (Kafka's BROKER resource with an empty name), under broker names
	// such as log.retention.ms.
	ConfigClusterDefaults ConfigResource = 2
)

// AlterConfigs replaces a resource's dynamic configs with Configs, whole
// (Kafka's AlterConfigs; the proposer computes IncrementalAlterConfigs
// from the current map). An empty map clears them. Apply checks that the
// topic exists (for ConfigTopic) and validates every entry:
// topicconfig.ValidateAll for a topic, topicconfig.ValidateBrokerAll for
// the cluster defaults.
//
// Result: AlterConfigsResult.
type AlterConfigs struct {
	Resource ConfigResource
	Topic    string // for ConfigTopic; "" otherwise
	Configs  map[string]string
}

// AlterConfigsResult answers AlterConfigs with the stored configs.
type AlterConfigsResult struct {
	Configs map[string]string
}

// Type implements Command.
func (AlterConfigs) Type() CommandType { return TypeAlterConfigs }

// Type implements Command.
func (InitCluster) Type() CommandType { return TypeInitCluster }

// Type implements Command.
func (RegisterBroker) Type() CommandType { return TypeRegisterBroker }

// Type implements Command.
func (CreateTopic) Type() CommandType { return TypeCreateTopic }

// Type implements Command.
func (SetPartitionLeader) Type() CommandType { return TypeSetPartitionLeader }

// Type implements Command.
func (AllocateProducerID) Type() CommandType { return TypeAllocateProducerID }

// Type implements Command.
func (CreatePartitions) Type() CommandType { return TypeCreatePartitions }

// Type implements Command.
func (DeleteTopic) Type() CommandType { return TypeDeleteTopic }
