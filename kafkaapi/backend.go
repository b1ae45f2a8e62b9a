package kafkaapi

import (
	"context"
	"time"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/internal/scram"
)

// Backend is everything the Kafka front end needs from the node, in five
// required roles. The server calls it from many connection goroutines at
// once, so every method must be safe for concurrent use.
//
// Errors returned by Backend and Partition methods should be, or wrap
// (errors.As), a *kerr.Error; its code goes on the wire. Other errors are
// answered as described at ErrorCode. A capability that a node may switch
// off by configuration (authorization, stored ACLs, SCRAM management,
// reassignment, transaction verification) is switched off by an answer
// documented at the method, never by leaving the method out.
type Backend interface {
	Topics
	Admin
	Groups
	Transactions
	Security
}

// Topics is the Backend role that serves the cluster's topics and their
// partitions' local replicas.
type Topics interface {
	// Cluster returns this node's current view of the cluster for a
	// Metadata request. It must not block for long (it should read local
	// state). The server answers topics in the order of View.Topics when a
	// client asks for all topics, so the backend should list them in a
	// stable order (e.g. sorted by name).
	Cluster() ClusterView

	// CreateTopic creates a topic or, with validateOnly, only reports
	// whether it could be created. The server has already checked the name
	// with ValidateTopicName, that Partitions and ReplicationFactor are
	// positive or -1 (-1 means the node's default), that the request's
	// topics stay within Config.MaxCreatePartitions, and that
	// ReplicationFactor is at most the brokers Cluster lists. It returns
	// the topic as created, with defaults resolved. Expected errors:
	// kerr.TopicAlreadyExists, kerr.InvalidPartitions,
	// kerr.InvalidReplicationFactor (for example more replicas than live
	// brokers), kerr.NotController, kerr.RequestTimedOut; ctx carries the
	// request's deadline. A TopicLeaders backend returns without waiting
	// for the topic's leaders.
	CreateTopic(ctx context.Context, spec TopicSpec, validateOnly bool) (CreatedTopic, error)

	// CreatePartitions grows a topic to count partitions or, with
	// validateOnly, only reports whether it could. Expected errors:
	// kerr.UnknownTopicOrPartition, kerr.InvalidPartitions (count not above
	// the current one), kerr.InvalidReplicationFactor (fewer live brokers
	// than the topic's replicas), kerr.PolicyViolation, kerr.InvalidRequest
	// (a topic whose partitions cannot change); ctx carries the deadline.
	// A TopicLeaders backend returns without waiting for the new leaders.
	CreatePartitions(ctx context.Context, topic string, count int32, validateOnly bool) error

	// DeleteTopic deletes a topic and its data on every replica. Expected
	// errors: kerr.UnknownTopicOrPartition, kerr.InvalidTopicException (an
	// internal topic), kerr.NotController, kerr.RequestTimedOut.
	DeleteTopic(ctx context.Context, topic string) error

	// AutoCreateTopics reports whether a Metadata request that names an
	// unknown topic, and allows it, should create it with the defaults.
	AutoCreateTopics() bool

	// Partition returns the local replica of a partition. It must not
	// block. Errors: kerr.UnknownTopicOrPartition if the partition does not
	// exist, kerr.NotLeaderForPartition if this node holds no replica of it.
	// A returned replica that is not the leader is answered
	// NOT_LEADER_OR_FOLLOWER by the server (see Partition.IsLeader).
	Partition(topic string, partition int32) (Partition, error)
}

// Admin is the Backend role that serves configs and partition
// reassignment.
type Admin interface {
	// Configs returns this node's settings for DescribeConfigs: under
	// Kafka's broker config names where Kafka has the setting (broker.id,
	// which must be present, num.partitions, log.segment.bytes, ...), and
	// for the node's own settings under names starting with "minikafka.".
	// They are static (fixed when the node started) and listed in a stable
	// order. A topic config whose broker synonym is listed (for example
	// segment.bytes for log.segment.bytes) takes the node's value.
	Configs() []ConfigEntry

	// TopicConfigs returns a topic's config overrides (nil when it has
	// none), under topic config names. It reads local state and must not
	// block. Errors: kerr.UnknownTopicOrPartition.
	TopicConfigs(topic string) (map[string]string, error)

	// ClusterConfigs returns the cluster-wide dynamic broker defaults
	// (Kafka's BROKER resource with an empty name), under broker config
	// names such as log.retention.ms; nil when none is set. It reads
	// local state and must not block.
	ClusterConfigs() map[string]string

	// AlterTopicConfigs replaces a topic's overrides with configs, whole,
	// or with validateOnly only reports whether it could. The server has
	// validated configs with topicconfig.ValidateAll. Expected errors:
	// kerr.UnknownTopicOrPartition, kerr.InvalidConfig,
	// kerr.NotController, kerr.RequestTimedOut; ctx carries the deadline.
	AlterTopicConfigs(ctx context.Context, topic string, configs map[string]string, validateOnly bool) error

	// AlterClusterConfigs replaces the cluster-wide dynamic broker
	// defaults, whole, or with validateOnly only reports whether it could.
	// The server has validated configs with topicconfig.ValidateBrokerAll.
	// Expected errors as AlterTopicConfigs, without the unknown topic.
	AlterClusterConfigs(ctx context.Context, configs map[string]string, validateOnly bool) error

	// Reassignments lists the partition moves in progress, sorted by
	// topic then partition. It must not block for long. A node that does
	// not move partitions answers an error wrapping
	// kerr.UnsupportedVersion: AlterPartitionReassignments and
	// ListPartitionReassignments then answer it.
	Reassignments() ([]Reassignment, error)

	// AlterReassignment starts, changes or, with target nil, cancels one
	// partition's move, through the cluster's replicated metadata; the
	// move itself runs in the background. Expected errors:
	// kerr.UnknownTopicOrPartition, kerr.InvalidReplicaAssignment,
	// kerr.NoReassignmentInProgress, kerr.NotController,
	// kerr.RequestTimedOut.
	AlterReassignment(ctx context.Context, topic string, partition int32, target []int32) error
}

// NodeStatus is an optional capability of a Backend, found by type
// assertion: read-only figures of the node's state as it runs, such as
// the dirty ratios of the compacted partitions it leads, which
// DescribeConfigs of this broker lists after Configs. Their names start
// with "minikafka."; they never stand for a topic config.
type NodeStatus interface {
	// StatusConfigs returns the figures now; it must not block.
	StatusConfigs() []ConfigEntry
}

// Security is the Backend role that decides and administers access: the
// authorizer, the ACLs it decides by, and the SCRAM credentials SASL
// listeners authenticate against.
type Security interface {
	// Authorize decides whether a connection's principal may do an
	// operation on a resource (Kafka's authorizer). The server asks it
	// where Kafka's KafkaApis asks its authorizer, with the principal
	// "User:<SASL user>" on a SASL listener, "User:<subject DN>" for a
	// TLS client certificate, else acl.Anonymous. A node without
	// authorization allows every request. It must be cheap and must not
	// block.
	Authorize(r acl.Request) bool
	// AuthorizeAny decides whether the principal may do op on at least
	// one resource of type rt; as Authorize otherwise.
	AuthorizeAny(principal, host string, op acl.Operation, rt acl.ResourceType) bool

	// ACLs returns the stored bindings. It must not block for long. A
	// node that stores no ACLs answers an error wrapping
	// kerr.SecurityDisabled: CreateAcls, DescribeAcls and DeleteAcls then
	// answer it, as Kafka does without an authorizer.
	ACLs() (acl.Set, error)
	// CreateACLs stores valid bindings through the cluster's replicated
	// metadata and returns one error per binding (nil when stored), or
	// an error for the whole request.
	CreateACLs(ctx context.Context, bindings []acl.Binding) ([]error, error)
	// DeleteACLs removes what each valid filter matches and returns, per
	// filter, the removed bindings or its error, or an error for the
	// whole request.
	DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, []error, error)

	// ScramCredential returns a user's stored SCRAM credential for a
	// mechanism; ok is false if there is none (a node that stores none
	// answers false for everyone, so its SASL listeners admit nobody).
	// SCRAM-SHA-256 and SCRAM-SHA-512 check a client's proof against it;
	// PLAIN checks the password against the user's SCRAM-SHA-512
	// credential, else its SCRAM-SHA-256 one, so one set of users serves
	// all three mechanisms. It must not block for long.
	ScramCredential(user string, m scram.Mechanism) (c scram.Credential, ok bool)
	// ScramUsers lists every stored credential, sorted by user then
	// mechanism. It must not block for long. A node that does not manage
	// credentials answers an error wrapping kerr.UnsupportedVersion:
	// DescribeUserScramCredentials and AlterUserScramCredentials then
	// answer it.
	ScramUsers() ([]ScramCredentialInfo, error)
	// AlterScramCredentials applies one AlterUserScramCredentials: each
	// user's changes all or nothing, users independently, through the
	// cluster's replicated metadata. It returns each named user's error
	// (nil when applied), or an error for the whole request. Expected
	// per-user errors: kerr.ResourceNotFound, kerr.UnsupportedSaslMechanism,
	// kerr.UnacceptableCredential, kerr.DuplicateResource.
	AlterScramCredentials(ctx context.Context, deletions []ScramDeletion, upsertions []ScramUpsertion) (map[string]error, error)

	// Delegation tokens (KIP-48). A node that does not serve them (no
	// token secret, or no SASL listener) answers an error wrapping
	// kerr.DelegationTokenAuthDisabled from the four methods below, and
	// false from DelegationTokenCredential.
	//
	// CreateDelegationToken stores a new token for owner, asked by
	// requester (principals "Type:Name"; the server has checked that the
	// requester may), with the renewers and a maximum lifetime (<= 0:
	// the node's), and returns it with its HMAC. Expected errors:
	// kerr.PolicyViolation (too many tokens or renewers).
	CreateDelegationToken(ctx context.Context, owner, requester string, renewers []string, maxLifetimeMs int64) (DelegationToken, error)
	// RenewDelegationToken extends the token of hmac for principal by
	// periodMs (<= 0: the node's expiry time), never past its maximum,
	// and returns the new expiry. Expected errors:
	// kerr.DelegationTokenNotFound, kerr.DelegationTokenExpired,
	// kerr.DelegationTokenOwnerMismatch.
	RenewDelegationToken(ctx context.Context, principal string, hmac []byte, periodMs int64) (expiryMs int64, err error)
	// ExpireDelegationToken sets the token's expiry to now+periodMs
	// (never past its maximum), or removes it at once for a negative
	// period (returned as the expiry). Errors as RenewDelegationToken.
	ExpireDelegationToken(ctx context.Context, principal string, hmac []byte, periodMs int64) (expiryMs int64, err error)
	// DescribeDelegationTokens lists every stored token with its HMAC,
	// sorted by id. It must not block for long.
	DescribeDelegationTokens() ([]DelegationToken, error)
	// DelegationTokenCredential returns the SCRAM credential of a token
	// for a mechanism, for a login with tokenauth=true. It must not
	// block for long.
	DelegationTokenCredential(tokenID string, m scram.Mechanism) (TokenCredential, bool)
}

// ClusterView is a snapshot of the cluster for a Metadata answer.
type ClusterView struct {
	ClusterID    string // "" is answered as null
	ControllerID int32  // -1 if unknown
	Brokers      []Broker
	Topics       []TopicView
	// Down are the registered brokers this node sees down (not answered
	// in Metadata, as Kafka lists live brokers only).
	Down []DownBroker
}

// DownBroker is a registered broker that gossip does not see alive, and
// since when this node has seen it so. It is what KRaft calls a fenced
// broker: registered, but not heartbeating, so it leads nothing.
type DownBroker struct {
	NodeID int32
	Since  time.Time
	// Registered is the broker's registered listeners, as Brokers lists a
	// live one's (DescribeCluster v2 lists it with IncludeFencedBrokers);
	// a zero Port when unknown.
	Registered Broker
}

// Broker is one live node's Kafka listener.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string // "" is answered as null
	// Endpoints are the broker's advertised listeners by name; a
	// connection through a named Listener sees the endpoint of that name
	// in Host and Port.
	Endpoints []Endpoint
}

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Listener string
	Host     string
	Port     int32
}

// TopicView is one topic in a ClusterView.
type TopicView struct {
	Name       string
	ID         [16]byte // all zero if the topic has no id
	Internal   bool
	Partitions []PartitionView
}

// PartitionView is one partition in a TopicView.
type PartitionView struct {
	Partition       int32
	Leader          int32 // node id, -1 if no leader (answered LEADER_NOT_AVAILABLE)
	LeaderEpoch     int32
	Replicas        []int32
	ISR             []int32
	OfflineReplicas []int32
}

// TopicSpec asks for a topic. -1 means the node's default.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	// Configs are the topic's overrides, checked with
	// topicconfig.ValidateAll; nil when none.
	Configs map[string]string
}

// CreatedTopic is a topic as CreateTopic made (or would make) it.
type CreatedTopic struct {
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string // the overrides; filled in by the server
}

// InitProducerIDRequest asks for a producer identity.
type InitProducerIDRequest struct {
	// TransactionalID is nil for an idempotent producer; never "" (the
	// server answers that INVALID_REQUEST itself).
	TransactionalID    *string
	TransactionTimeout time.Duration
	// ProducerID and ProducerEpoch are -1, or (InitProducerId v3+, KIP-360)
	// the identity the client has now and wants bumped.
	ProducerID    int64
	ProducerEpoch int16
}

// ProducerIdentity is a producer id and epoch.
type ProducerIdentity struct {
	ID    int64
	Epoch int16
}

// LogDirs is an optional capability of a Backend, found by type
// assertion: the node's log directories, for DescribeLogDirs. A backend
// without it answers no directories.
type LogDirs interface {
	// LogDirs returns each log directory of this node with its local
	// replicas. It reads local state and must not block for long.
	LogDirs() []LogDir
}

// LogDir is one log directory of a node and the replicas it holds.
type LogDir struct {
	Path string // absolute
	// Err is why the directory cannot be used (its disk failed), answered
	// KAFKA_STORAGE_ERROR; nil when it works.
	Err                     error
	TotalBytes, UsableBytes int64 // the filesystem's; -1 when unknown
	// Replicas are sorted by topic, then partition.
	Replicas []ReplicaSize
}

// ReplicaSize is one local replica in a LogDir.
type ReplicaSize struct {
	Topic     string
	Partition int32
	Size      int64 // bytes of the partition's log
	// OffsetLag is how far the replica's log end is behind its high
	// watermark: 0 where the log holds only what is applied.
	OffsetLag int64
}

// LeaderElection is an optional capability of a Backend, found by type
// assertion: moving a partition's leadership for ElectLeaders. A backend
// without it answers every preferred election PREFERRED_LEADER_NOT_AVAILABLE.
type LeaderElection interface {
	// ElectPreferred hands a partition's leadership to its preferred
	// replica (the first of its replicas), where the partition's leader
	// is, and returns once the leader stepped down for it, or ctx ends.
	// Expected errors: kerr.UnknownTopicOrPartition,
	// kerr.ElectionNotNeeded (the preferred replica leads),
	// kerr.PreferredLeaderNotAvailable (it is not in sync, or the
	// partition has no leader to hand over), kerr.RequestTimedOut.
	ElectPreferred(ctx context.Context, topic string, partition int32) error
}

// ProducerStates is an optional capability of a Partition, found by type
// assertion: the replica's producer state, for DescribeProducers. A
// replica without it is answered NOT_LEADER_OR_FOLLOWER.
type ProducerStates interface {
	// ActiveProducers returns every producer the replica's state holds,
	// as it has applied it, or ctx's error if it cannot read that state
	// before ctx ends (an apply holds it).
	ActiveProducers(ctx context.Context) ([]ActiveProducer, error)
}

// ActiveProducer is one producer's state on a partition.
type ActiveProducer struct {
	ProducerID    int64
	ProducerEpoch int16
	LastSequence  int32 // of its last batch; -1 when none is retained
	LastTimestamp int64 // of its last batch or marker; -1 when unknown
	// CoordinatorEpoch is of its last transaction marker, -1 before any;
	// TxnStartOffset the first offset of its open transaction, -1 if none.
	CoordinatorEpoch int32
	TxnStartOffset   int64
}

// MetadataQuorum is an optional capability of a Backend, found by type
// assertion: the cluster's metadata Raft group, for DescribeQuorum. A
// backend without it answers NOT_LEADER_OR_FOLLOWER.
type MetadataQuorum interface {
	// Quorum describes the metadata group as its leader sees it, asking
	// the leader's node when this node does not lead it. Expected
	// errors: kerr.NotLeaderForPartition (no leader now),
	// kerr.RequestTimedOut.
	Quorum(ctx context.Context) (QuorumView, error)
}

// QuorumView is the metadata group as its leader sees it. Offsets are
// Raft log indexes.
type QuorumView struct {
	LeaderID      int32
	LeaderEpoch   int32 // the group's term
	HighWatermark int64 // the commit index
	// Voters and Observers (non-voters) with their progress; the leader
	// is among the voters.
	Voters, Observers []QuorumReplica
}

// QuorumReplica is one member of the metadata group.
type QuorumReplica struct {
	NodeID       int32
	LogEndOffset int64 // the last index known to match the leader's; -1 if unknown
	// LastFetch is when the member last answered the leader, and
	// LastCaughtUp when it last matched the leader's commit index; -1
	// when unknown (milliseconds since the epoch).
	LastFetch, LastCaughtUp int64
}
