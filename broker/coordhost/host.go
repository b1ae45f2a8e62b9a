package coordhost

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/sharepart"
	"github.com/minikafka/minikafka-go/txncoord"
)

// Config is what the Host needs of the node's configuration.
type Config struct {
	NodeID int32
	// GroupMinSessionTimeout and GroupMaxSessionTimeout bound the session
	// timeouts members may ask for; GroupInitialRebalanceDelay is the
	// first rebalance's wait for more members (0: none).
	GroupMinSessionTimeout, GroupMaxSessionTimeout time.Duration
	GroupInitialRebalanceDelay                     time.Duration
	// GroupConsumer tunes KIP-848 consumer groups.
	GroupConsumer groupcoord.ConsumerConfig
	// GroupShare tunes KIP-932 share groups.
	GroupShare groupcoord.ShareConfig
	// TxnMaxTimeout bounds a producer's transaction timeout;
	// TxnAbortInterval is how often a coordinator aborts timed-out
	// transactions.
	TxnMaxTimeout, TxnAbortInterval time.Duration
	// TxnPartitionVerification makes a TxnOffsetCommit verify its
	// transaction with the transaction's coordinator (KIP-890).
	TxnPartitionVerification bool
	// TxnPendingOffsetsCheckInterval is how often a __consumer_offsets
	// leader checks the transactional commits pending for longer.
	TxnPendingOffsetsCheckInterval time.Duration
	// OffsetsRetention is how long committed offsets are kept
	// (ExpireOffsets).
	OffsetsRetention time.Duration
	Tuning           Tuning
}

// Tuning is the Host's intervals and bounds; every field must be set (the
// broker's Tuning holds their defaults).
type Tuning struct {
	// Proposal bounds a coordinator's write, the settling of a new
	// leader and each expiry round (the broker's ProduceEnqueue).
	Proposal time.Duration
	// Request bounds a request to another node (WriteTxnMarkers, a
	// verification) or a metadata look-up (the broker's MetaProposal).
	Request time.Duration
	// LoadWait is how long a request waits for its coordinator to load
	// before COORDINATOR_LOAD_IN_PROGRESS (0: not at all).
	LoadWait time.Duration
	// SettleRetry is the wait between a new leader's attempts to settle.
	SettleRetry time.Duration
}

// Metadata is what the Host needs of the node's member of the metadata
// group (*controller.Controller).
type Metadata interface {
	State() *metadata.Snapshot
	NewProducerID(ctx context.Context) (metadata.ProducerIdentity, error)
}

var _ Metadata = (*controller.Controller)(nil)

// Deps are the parts of the node the Host uses.
type Deps struct {
	Meta Metadata
	// PartitionLeader reports a partition's leader and leader epoch as the
	// node sees them.
	PartitionLeader func(topic string, p int32) (leader, epoch int32, ok bool)
	// Replica returns the node's open replica of topic/p (the replica
	// host's Set.Get).
	Replica func(topic string, p int32) (*Replica, bool)
	// Verifier asks transaction coordinators whether a transaction holds
	// partitions (the Kafka backend's VerifyTxnPartitions).
	Verifier kafkaapi.TxnVerifier
	// OffsetsPartition returns the __consumer_offsets partition of a
	// group, creating the topic on first need.
	OffsetsPartition func(ctx context.Context, group string) (int32, error)
	// TransactionalIDExpiration is transactional.id.expiration.ms now.
	TransactionalIDExpiration func() time.Duration
	// ClientOpts are the options of a Kafka client to another node (TLS
	// and SASL of the inter-broker listener), made anew for each client.
	ClientOpts func() []kgo.Opt
	Logger     *slog.Logger
}

// Host runs this node's group and transaction coordinators.
type Host struct {
	cfg    Config
	deps   Deps
	logger *slog.Logger

	ctx    context.Context // ends loads, sweepers and expiry rounds; cancelled by New's context or Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the goroutines that load and close coordinators

	groups  ledCoords[*groupCoord]           // on the __consumer_offsets partitions this node leads
	txns    ledCoords[*txncoord.Coordinator] // on the __transaction_state partitions it leads
	markers *markerWriter                    // the transaction coordinators' markers
	// shareLocks serialise the share-state writes of each
	// __share_group_state partition (sharestate.go).
	shareLocks [shareStateLocks]sync.Mutex
	// shareGone are the share partitions whose topic was missing at the
	// last ForgetDeletedShareState; only its one caller touches it.
	shareGone map[sharepart.Key]bool
}

// New makes the Host; its coordinators start as the node gains the
// leadership of internal topics' replicas (OnLeader).
func New(ctx context.Context, cfg Config, deps Deps) *Host {
	h := &Host{cfg: cfg, deps: deps, logger: deps.Logger}
	h.ctx, h.cancel = context.WithCancel(ctx)
	h.markers = newMarkerWriter(h)
	h.groups = newLedCoords(h, metadata.ConsumerOffsetsTopic, "group coordinator", h.startGroup)
	h.txns = newLedCoords(h, metadata.TransactionStateTopic, "transaction coordinator", h.startTxn)
	return h
}

// Group returns the group coordinator of __consumer_offsets partition p,
// or the error to answer (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
// after waiting Tuning.LoadWait for a loading one).
func (h *Host) Group(ctx context.Context, p int32) (kafkaapi.GroupCoordinator, error) {
	c, err := h.groups.get(ctx, p)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Groups returns every running group coordinator, and
// COORDINATOR_LOAD_IN_PROGRESS with them while one is loading.
func (h *Host) Groups() ([]kafkaapi.GroupCoordinator, error) {
	running, err := h.groups.running()
	out := make([]kafkaapi.GroupCoordinator, len(running))
	for i, c := range running {
		out[i] = c
	}
	return out, err
}

// Txn returns the transaction coordinator of __transaction_state
// partition p, or the error to answer, as Group.
func (h *Host) Txn(ctx context.Context, p int32) (*txncoord.Coordinator, error) {
	return h.txns.get(ctx, p)
}

// Txns returns every running transaction coordinator, and
// COORDINATOR_LOAD_IN_PROGRESS with them while one is loading.
func (h *Host) Txns() ([]kafkaapi.TxnCoordinator, error) {
	cs, err := h.txns.running()
	out := make([]kafkaapi.TxnCoordinator, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out, err
}

// RequestNode sends req to another node over the Kafka client the marker
// writer keeps for such requests (made on first use, kept until Close;
// not the markers' own), once more if the first attempt fails on a stale
// connection (requestNode).
func (h *Host) RequestNode(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	cl, err := h.markers.client(node, false)
	if err != nil {
		return nil, err
	}
	return requestNode(ctx, cl, req)
}

// OnLeader hands a change of this node's leadership of an internal
// topic's replica to its coordinators; it runs on the replica's goroutine
// (the replica host's Deps.OnLeader).
func (h *Host) OnLeader(lr *Replica, leader bool, term uint64) {
	if lr.Extra().view != nil {
		h.groups.leadership(lr, leader, term)
	}
	if lr.Extra().txnView != nil {
		h.txns.leadership(lr, leader, term)
	}
}

// Close closes every transaction coordinator, then the marker writer, then
// every group coordinator; no coordinator starts after it. Call it while
// the replicas still run.
func (h *Host) Close() {
	h.cancel()
	h.txns.closeAll()
	h.markers.close()
	// Before the replicas: a coordinator's pending writes are resolved by
	// its running Raft group (committed, or failed when the leadership
	// ends), which a closed group may not do.
	h.groups.closeAll()
}

// Wait waits for the goroutines that load and close coordinators; call it
// after Close, once no leadership change can come.
func (h *Host) Wait() { h.wg.Wait() }
