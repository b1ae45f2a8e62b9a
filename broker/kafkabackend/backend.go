package kafkabackend

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/metrics"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/topicconfig"
	"github.com/minikafka/minikafka-go/txncoord"
)

// Metadata is what the Backend needs of the node's member of the metadata
// group (*controller.Controller).
type Metadata interface {
	State() *metadata.Snapshot
	// LeaderID is the metadata leader's node id, -1 while there is none.
	LeaderID() int32
	Propose(ctx context.Context, cmd metadata.Command) (controller.Reply, error)
	// WaitFor returns once cond holds of the local copy, or ctx ends.
	WaitFor(ctx context.Context, cond func(*metadata.Snapshot) bool) (*metadata.Snapshot, error)
	NewProducerID(ctx context.Context) (metadata.ProducerIdentity, error)
}

var _ Metadata = (*controller.Controller)(nil)

// Coordinators are the group and transaction coordinators this node runs,
// one per partition of __consumer_offsets or __transaction_state it leads,
// and the Kafka clients of the other nodes.
type Coordinators interface {
	// Group is the coordinator of __consumer_offsets partition p.
	Group(ctx context.Context, p int32) (kafkaapi.GroupCoordinator, error)
	Groups() ([]kafkaapi.GroupCoordinator, error)
	// Txn is the coordinator of __transaction_state partition p.
	Txn(ctx context.Context, p int32) (*txncoord.Coordinator, error)
	Txns() ([]kafkaapi.TxnCoordinator, error)
	// RequestNode sends a request to another node's Kafka listener, once
	// more if the first attempt meets a stale connection (the
	// verification of a transactional batch's partition is harmless to
	// repeat).
	RequestNode(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error)
}

// Replica is one of this node's partition replicas.
type Replica interface {
	Partition() *partition.Replica
	// Config is the topic's configs as the replica last took them.
	Config() topicconfig.Config
	Traffic() *metrics.Traffic
	// Verified is the replica's memory of verified transactions, shared
	// by every lookup.
	Verified() Verified
}

// Verified remembers, while this node leads a partition, the transactions
// verified to hold it (KIP-890), and orders their batches against markers.
type Verified interface {
	// Check reports whether producer pid's transaction at epoch is
	// verified in this leader epoch, and the guard to produce under.
	Check(leaderEpoch int32, pid int64, epoch int16) (bool, kafkaapi.TxnGuard)
	// Produce calls propose unless a marker for pid, or a new leader
	// epoch, came after guard (then it returns why).
	Produce(leaderEpoch int32, pid int64, epoch int16, guard kafkaapi.TxnGuard, propose func()) error
	// Marker calls propose for a marker of pid at epoch and forgets its
	// verification (with v2, a marker of transactions v2, one of an
	// earlier epoch only).
	Marker(pid int64, epoch int16, v2 bool, propose func())
}

// Config is what the Backend needs of the node's static configuration;
// Configs reports most of it to clients under Kafka's names.
type Config struct {
	NodeID int32
	// KafkaAddr, AdvertisedKafkaAddr, AdvertisedRaftAddr and
	// AdvertisedGossip are the node's addresses, ports resolved.
	KafkaAddr, AdvertisedKafkaAddr string
	AdvertisedRaftAddr             string
	AdvertisedGossip               string
	DataDir                        string
	BootstrapExpect                int

	// Topic creation: the defaults of CreateTopics, and the cluster's and
	// each node's bounds on partitions.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	AutoCreateTopics         bool
	MaxPartitions            int32
	MaxNodeReplicas          int32
	// The internal topics' shapes, used when they are first created.
	OffsetsTopicPartitions        int32
	OffsetsTopicReplicationFactor int16
	TxnTopicPartitions            int32
	TxnTopicReplicationFactor     int16
	// CleanInternalTopics: the internal topics are compacted, and
	// described so.
	CleanInternalTopics bool

	// Authorization (acls.go).
	AuthorizationEnabled      bool
	SuperUsers                []string
	AllowEveryoneIfNoACLFound bool

	// Reported only (Configs).
	LeaderRebalanceInterval         time.Duration
	SegmentBytes                    int64
	LogRetentionMs                  int64
	LogRetentionBytes               int64
	RetentionCheckInterval          time.Duration
	ProducerIDExpirationMs          int64
	ProducerExpirationCheckInterval time.Duration
	OffsetsRetention                time.Duration
	OffsetsRetentionCheckInterval   time.Duration
	TransactionalIDExpirationMs     int64
	TxnRemoveExpiredInterval        time.Duration
	MaxRequestBytes                 int32
	MessageMaxBytes                 int32
	TxnPartitionVerification        bool
	WriteCachingDefault             bool
	LogFlushIntervalMs              int64
	ProducerWindow                  int

	// TopicLeaders is how long CreateTopics waits for the new partitions'
	// leaders; ProduceEnqueue bounds the wait for a slot in a partition's
	// Raft apply queue; MetaProposal bounds a metadata change the backend
	// makes on its own (creating an internal topic).
	TopicLeaders   time.Duration
	ProduceEnqueue time.Duration
	MetaProposal   time.Duration
	// ReplicaLagMax is how long a follower of a partition this node leads
	// may go without answering or catching up before it leaves the ISR
	// (replica.lag.time.max.ms).
	ReplicaLagMax time.Duration
	// Tokens are the delegation token settings (dtokens.go).
	Tokens TokenConfig
	// Share configures share groups (shares.go).
	Share ShareConfig
}

// Deps are the parts of the node the Backend uses.
type Deps struct {
	Meta Metadata
	// Members lists the nodes gossip sees alive.
	Members func() []membership.NodeMeta
	// DownSince is since when this node has seen a registered broker that
	// gossip does not list alive (nil: unknown).
	DownSince func(id int32) time.Time
	// PartitionLeader is the leader and leader epoch of a partition as
	// this node sees them; ok is false while it has none.
	PartitionLeader func(topic string, p int32) (leader, epoch int32, ok bool)
	Coordinators    Coordinators
	// Shares is the node's share coordinator (shares.go).
	Shares ShareCoordinator
	// Replica looks up this node's replica of topic/p.
	Replica func(topic string, p int32) (Replica, bool)
	// Configs resolves the cluster-wide dynamic configs.
	Configs *Resolver
	// RefuseNewPartitions is why no topic or partition may be created now
	// (a disk below its reserve), or nil.
	RefuseNewPartitions func() error
	// DirtyRatios are the dirty ratios of the partitions of compacted
	// topics this node leads, in no order (StatusConfigs).
	DirtyRatios func() []DirtyRatio
	// LogDirs are the node's log directories with its replicas (nil:
	// none are reported).
	LogDirs func() []kafkaapi.LogDir
}

// Backend answers the Kafka front end (kafkaapi.Server) from the node's
// state.
type Backend struct {
	cfg    Config
	deps   Deps
	shares *shares // the share partitions this node leads, and its share sessions
}

var (
	_ kafkaapi.Backend      = (*Backend)(nil)
	_ kafkaapi.LeaderLookup = (*Backend)(nil)
)

// New makes the Backend; it starts nothing.
func New(cfg Config, deps Deps) *Backend {
	b := &Backend{cfg: cfg, deps: deps}
	b.shares = newShares(b)
	return b
}

// AutoCreateTopics reports whether a Metadata request for an unknown
// topic creates it (auto.create.topics.enable).
func (b *Backend) AutoCreateTopics() bool { return b.cfg.AutoCreateTopics }

// alive is the set of node ids gossip sees alive.
func (b *Backend) alive() map[int32]bool {
	out := map[int32]bool{}
	for _, m := range b.deps.Members() {
		out[m.ID] = true
	}
	return out
}

// Cluster is the cluster as this node sees it: the brokers gossip sees
// alive (and the controller), the registered brokers it does not (Down),
// and every topic's partitions with their leaders, in-sync and offline
// replicas.
func (b *Backend) Cluster() kafkaapi.ClusterView {
	state := b.deps.Meta.State()
	alive := b.alive()
	view := b.brokersView(state, alive)
	now := time.Now()
	for _, t := range state.Topics() {
		view.Topics = append(view.Topics, b.topicView(state, t, alive, now))
	}
	return view
}

// TopicView is one topic of Cluster's view (kafkaapi.LeaderLookup).
func (b *Backend) TopicView(name string) (kafkaapi.TopicView, bool) {
	state := b.deps.Meta.State()
	t, ok := state.Topic(name)
	if !ok {
		return kafkaapi.TopicView{}, false
	}
	return b.topicView(state, t, b.alive(), time.Now()), true
}

func (b *Backend) topicView(state *metadata.Snapshot, t metadata.Topic, alive map[int32]bool, now time.Time) kafkaapi.TopicView {
	tv := kafkaapi.TopicView{Name: t.Name, ID: t.ID, Internal: metadata.IsInternal(t.Name)}
	for i, p := range t.Partitions {
		move, _ := state.Reassignment(t.Name, int32(i))
		tv.Partitions = append(tv.Partitions, b.partitionView(t.Name, int32(i), p, move, alive, now))
	}
	return tv
}

// ClusterBrokers is Cluster without its topics (kafkaapi.LeaderLookup).
func (b *Backend) ClusterBrokers() kafkaapi.ClusterView {
	return b.brokersView(b.deps.Meta.State(), b.alive())
}

// brokersView is Cluster's view of the brokers.
func (b *Backend) brokersView(state *metadata.Snapshot, alive map[int32]bool) kafkaapi.ClusterView {
	view := kafkaapi.ClusterView{ClusterID: state.ClusterID(), ControllerID: b.deps.Meta.LeaderID()}
	for _, br := range state.Brokers() {
		// The controller is alive as far as Raft knows even when gossip
		// has not caught up; Kafka never names a controller it does not
		// list.
		if !alive[br.ID] && br.ID != view.ControllerID {
			continue
		}
		if bv, ok := brokerView(br); ok {
			view.Brokers = append(view.Brokers, bv)
		}
	}
	view.Down = b.downBrokers(state, alive)
	return view
}

// partitionView is one partition as this node sees it. A replica is in
// sync while gossip sees its node alive and, where this node leads the
// partition, while Raft's progress says it keeps up (Replication.ISR); a
// replica being added is not in sync yet.
func (b *Backend) partitionView(topic string, i int32, p metadata.Partition, move metadata.Reassignment,
	alive map[int32]bool, now time.Time) kafkaapi.PartitionView {
	pv := kafkaapi.PartitionView{Partition: i, Replicas: slices.Clone(p.Replicas)}
	inSync := func(r int32) bool { return alive[r] && !slices.Contains(move.Adding(), r) }
	lr, local := b.deps.Replica(topic, i)
	pv.Leader, pv.LeaderEpoch = leaderOf(p, lr, local, func(id int32) bool { return alive[id] })
	if local {
		if rep := lr.Partition().Group().Replication(); rep.Leader {
			led := rep.ISR(b.cfg.NodeID, now, b.cfg.ReplicaLagMax, inSync)
			inSync = func(r int32) bool { return slices.Contains(led, r) }
		}
	}
	for _, r := range p.Replicas {
		if inSync(r) {
			pv.ISR = append(pv.ISR, r)
		} else {
			pv.OfflineReplicas = append(pv.OfflineReplicas, r)
		}
	}
	return pv
}

// PartitionLeader is the leader and leader epoch of topic/i as Cluster
// shows them, found for that partition alone: coordinators ask it for each
// transaction's verification and markers and each group request, and
// Cluster builds every partition's view (its cost grew with the cluster's
// partitions).
func (b *Backend) PartitionLeader(topic string, i int32) (leader, epoch int32, ok bool) {
	p, found := b.deps.Meta.State().Partition(topic, i)
	if !found {
		return -1, -1, false
	}
	lr, local := b.deps.Replica(topic, i)
	leader, epoch = leaderOf(p, lr, local, func(id int32) bool {
		return slices.ContainsFunc(b.deps.Members(), func(m membership.NodeMeta) bool { return m.ID == id })
	})
	return leader, epoch, leader >= 0
}

// leaderOf is a partition's leader and epoch: a local replica's, which
// knows first hand, else the metadata's; -1 while it has none or gossip
// does not see the leader alive.
func leaderOf(p metadata.Partition, lr Replica, local bool, alive func(int32) bool) (leader, epoch int32) {
	leader, epoch = p.Leader, p.LeaderEpoch
	if local {
		if id, e, ok := lr.Partition().LeaderAndEpoch(); ok {
			leader, epoch = id, e
		} else {
			leader = -1
		}
	}
	if leader >= 0 && !alive(leader) {
		leader = -1
	}
	return leader, epoch
}

// downBrokers are the registered brokers that gossip does not see alive,
// but for the metadata leader (alive as far as Raft knows), with since
// when this node has seen them down.
func (b *Backend) downBrokers(state *metadata.Snapshot, alive map[int32]bool) []kafkaapi.DownBroker {
	var down []kafkaapi.DownBroker
	controller := b.deps.Meta.LeaderID()
	for _, br := range state.Brokers() {
		if alive[br.ID] || br.ID == controller {
			continue
		}
		d := kafkaapi.DownBroker{NodeID: br.ID}
		d.Registered, _ = brokerView(br)
		if b.deps.DownSince != nil {
			d.Since = b.deps.DownSince(br.ID)
		}
		down = append(down, d)
	}
	return down
}

// Partition is this node's replica of topic/p, NOT_LEADER_FOR_PARTITION
// if the partition exists but this node holds no replica of it.
func (b *Backend) Partition(topic string, p int32) (kafkaapi.Partition, error) {
	if lr, ok := b.deps.Replica(topic, p); ok {
		rp := replicaPartition{r: lr.Partition(), enqueue: b.cfg.ProduceEnqueue, cfg: lr.Config(), txn: lr.Verified(),
			traffic: lr.Traffic()}
		if metadata.IsInternal(topic) {
			return internalPartition{rp}, nil
		}
		return rp, nil
	}
	if _, ok := b.deps.Meta.State().Partition(topic, p); ok {
		return nil, fmt.Errorf("%w: node %d holds no replica of %s-%d", kerr.NotLeaderForPartition, b.cfg.NodeID, topic, p)
	}
	return nil, fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, topic, p)
}

// brokerView is a registered broker's Kafka listeners; ok is false when
// its kafka_addr does not parse.
func brokerView(br metadata.Broker) (kafkaapi.Broker, bool) {
	host, port, err := net.SplitHostPort(br.KafkaAddr)
	if err != nil {
		return kafkaapi.Broker{}, false
	}
	p, _ := strconv.Atoi(port)
	return kafkaapi.Broker{NodeID: br.ID, Host: host, Port: int32(p), Endpoints: endpoints(br)}, true
}

// protocolPlaintext is the listener name and security protocol of a
// broker's kafka_addr when it registers no listeners.
const protocolPlaintext = "PLAINTEXT"

// endpoints turns a registered broker's listeners into Metadata endpoints;
// a broker registered without listeners has its KafkaAddr as PLAINTEXT.
func endpoints(b metadata.Broker) []kafkaapi.Endpoint {
	ls := []metadata.Listener{{Name: protocolPlaintext, Addr: b.KafkaAddr}}
	if b.Listeners != "" {
		if parsed, err := metadata.ParseListeners(b.Listeners); err == nil {
			ls = parsed
		}
	}
	out := make([]kafkaapi.Endpoint, 0, len(ls))
	for _, l := range ls {
		host, port, err := net.SplitHostPort(l.Addr)
		if err != nil {
			continue
		}
		p, _ := strconv.Atoi(port)
		out = append(out, kafkaapi.Endpoint{Listener: l.Name, Host: host, Port: int32(p)})
	}
	return out
}
