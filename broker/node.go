// Package broker assembles a MiniKafka node: membership gossip, the
// metadata Raft group, one Raft group per local partition replica, all
// multiplexed over one Raft port, and the Kafka listener.
//
// Start brings a node up; Shutdown takes it down gracefully (hands its
// leaderships to other replicas first). cmd/node is a thin wrapper that
// loads a Config and handles signals; tests start nodes in-process.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/broker/coordhost"
	"github.com/minikafka/minikafka-go/broker/kafkabackend"
	"github.com/minikafka/minikafka-go/broker/replicas"
	"github.com/minikafka/minikafka-go/internal/diskguard"
	"github.com/minikafka/minikafka-go/internal/quota"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/metrics"
	"github.com/minikafka/minikafka-go/multiraft"
)

// Node is one running broker.
type Node struct {
	cfg    Config
	logger *slog.Logger

	ctx    context.Context // cancelled by Shutdown: stops every loop
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the node starts
	// housekeepingDone is closed when the housekeeping goroutine
	// (housekeeping.go) has returned; stop waits for it before closing the
	// replicas. Nil until start launches it.
	housekeepingDone chan struct{}

	host    *multiraft.Host
	members *membership.Membership
	meta    *controller.Controller         // the node's member of the metadata group
	addrs   addrBook                       // node id -> Raft address, for every group
	reps    *replicas.Set[coordhost.State] // this node's partition replicas
	coords  *coordhost.Host                // the coordinators of the internal topics' partitions this node leads
	backend *kafkabackend.Backend          // answers the Kafka front end
	kafka   *kafkaapi.Server
	admin   *adminSource      // what the metrics registry and the admin pages read
	console *webConsole       // the web console (console.go); nil when it could not be made
	metrics *metrics.Registry // fed by the components' hooks; read by AdminHandler
	quotas  *quota.Manager    // client quotas of the Kafka listener (broker/quota.go)
	// kafkaLns are the bound Kafka listeners, one per cfg.Listeners entry.
	kafkaLns []net.Listener

	// static are the node's static configs under Kafka's names; fixed at
	// Start (see TopicConfig).
	static map[string]string
	// configs resolves topics' configs from the metadata copy and static.
	configs *kafkabackend.Resolver

	// memberCh wakes the controller's duties loop on membership changes
	// (capacity 1; onMemberEvent never blocks on it).
	memberCh chan struct{}
	// down is since when each other node has been seen down.
	down *downSince

	// disk watches the data disk's free space (storage.go); logMemTable
	// is the Raft log store's memtable, sized to that disk.
	disk        *diskguard.Guard
	logMemTable int64
	// fullNodes are the other live nodes that gossip a full disk
	// (storage.go); olderCleaners the other nodes last seen on a build
	// that refuses the cleanings of a dirty part (nodeset.go).
	fullNodes     nodeSet
	olderCleaners nodeSet

	// started is set once start has succeeded, before Start returns; stop
	// says "node stopped" only then (a failed start is reported by Start).
	started bool

	shutdownOnce sync.Once
	shutdownErr  error
}

// Start brings a node up. It returns once the node listens on all its
// ports; joining the cluster, bootstrapping and electing go on in the
// background (see WaitReady).
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = logging.Discard()
	}
	logger = logger.With("node", cfg.NodeID)
	if err := privateDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	nctx, cancel := context.WithCancel(context.Background())
	n := &Node{
		cfg:      cfg,
		logger:   logger,
		ctx:      nctx,
		cancel:   cancel,
		memberCh: make(chan struct{}, 1),
		down:     newDownSince(time.Now()),
	}
	n.static = kafkabackend.StaticConfigs(n.backendConfig())
	n.admin = newAdminSource(n)
	n.metrics = metrics.New(n.admin)
	if err := n.openDiskGuard(); err != nil {
		cancel()
		return nil, err
	}
	if err := n.start(ctx); err != nil {
		n.Shutdown(context.Background())
		return nil, err
	}
	return n, nil
}

func (n *Node) start(ctx context.Context) error {
	// Raft groups resolve their peers through the metadata registry and
	// gossip, which exist before the first group opens.
	metaFSM := metadata.NewFSM(metadata.WithLogger(n.logger))
	n.addrs.fsm = metaFSM
	if err := n.listen(); err != nil {
		return err
	}
	if err := n.startGossip(); err != nil {
		return err
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.disk.Run(n.ctx)
	}()
	var err error
	if n.meta, err = n.openController(metaFSM); err != nil {
		return err
	}

	// Replicas already on disk start at once, before the metadata group
	// is up: their Raft groups know their members. The coordinators and
	// the backend exist before them: a replica's leadership starts a
	// coordinator, which verifies transactions through the backend.
	n.configs = kafkabackend.NewResolver(n.meta, n.static)
	n.coords = n.newCoordHost()
	n.backend = n.newBackend()
	n.reps = n.newReplicaSet()
	if err := n.reps.OpenFromDisk(); err != nil {
		return err
	}
	if err := n.serveKafka(); err != nil {
		return err
	}
	n.admin.started(n)
	n.startConsole()
	n.meta.StartDuties()
	n.reps.Start()
	n.housekeepingDone = make(chan struct{})
	go n.housekeeping()
	n.logger.Info("node started", "kafka", n.cfg.AdvertisedKafkaAddr, "raft", n.cfg.AdvertisedRaftAddr,
		"gossip", n.members.LocalAddr(), "data_dir", n.cfg.DataDir)
	n.started = true
	return nil
}

// listen binds the Raft port and the Kafka listener, and fills in the
// advertised addresses with the real ports (port 0 in tests), which go into
// the gossip metadata.
func (n *Node) listen() error {
	cfg := n.cfg
	advRaft := cfg.AdvertisedRaftAddr
	if advRaft == cfg.RaftAddr {
		advRaft = "" // the bound address, with port 0 resolved
	}
	var err error
	n.host, err = multiraft.Listen(multiraft.Config{NodeID: cfg.NodeID, BindAddr: cfg.RaftAddr, AdvertiseAddr: advRaft,
		Resolve: n.addrs.resolve, Logger: n.logger, Tuning: cfg.Tuning.Raft, LogDir: n.raftLogDir(),
		LogMemTable: n.logMemTable, LogFS: cfg.RaftLogFS,
		OnCommit: n.metrics.ObserveCommit, SourceAddr: cfg.RaftSourceAddr, TLS: cfg.Security.raftTLS})
	if err != nil {
		return fmt.Errorf("broker: raft_addr %s: %w", cfg.RaftAddr, err)
	}
	n.cfg.AdvertisedRaftAddr = n.host.Addr()
	for i := range n.cfg.Listeners {
		l := &n.cfg.Listeners[i]
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			return fmt.Errorf("broker: listener %s on %s: %w", l.Name, l.Addr, err)
		}
		n.kafkaLns = append(n.kafkaLns, ln)
		if l.AdvertisedAddr == l.Addr {
			l.AdvertisedAddr = ln.Addr().String() // port 0 resolved
		}
		if l.Addr == cfg.KafkaAddr && cfg.AdvertisedKafkaAddr == cfg.KafkaAddr {
			n.cfg.AdvertisedKafkaAddr = l.AdvertisedAddr
		}
	}
	return nil
}

// gossipListeners is what the node registers as its listeners: "" for the
// single PLAINTEXT listener of kafka_addr, which then stays readable by
// builds without listeners.
func (n *Node) gossipListeners() string {
	ls := n.cfg.Listeners
	if len(ls) == 1 && ls[0].Name == ProtocolPlaintext && ls[0].SecurityProtocol == ProtocolPlaintext {
		return ""
	}
	return advertisedListeners(ls)
}

// startGossip starts membership and joins the seeds in the background.
func (n *Node) startGossip() error {
	cfg := n.cfg
	var err error
	n.members, err = membership.New(membership.Config{
		Meta: membership.NodeMeta{ID: cfg.NodeID, KafkaAddr: cfg.AdvertisedKafkaAddr, RaftAddr: cfg.AdvertisedRaftAddr,
			Listeners: n.gossipListeners(), DiskFull: n.disk.Refusing(), CleansDirtyPart: true},
		BindAddr:      cfg.GossipAddr,
		AdvertiseAddr: cfg.AdvertisedGossip,
		SourceIP:      cfg.GossipSourceAddr,
		Logger:        n.logger,
		OnEvent:       n.onMemberEvent,
		Keys:          cfg.Security.gossipKeys,
		Label:         cfg.Security.ClusterLabel,
	})
	if err != nil {
		return fmt.Errorf("broker: gossip_addr %s: %w", cfg.GossipAddr, err)
	}
	n.addrs.setMembers(n.members)
	if len(cfg.Join) > 0 {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.join(cfg.Join)
		}()
	}
	return nil
}

// joinRetry is how long join waits before asking again while the cluster
// refuses this node's id as alive at another address.
const joinRetry = time.Second

// join joins the cluster through seeds. While the others still hold this
// node's id alive at another address (its previous run, on a host whose
// address changed, until gossip declares that address down: seconds) it
// asks again, as a Kafka broker retries its registration; a real second
// node with the same id keeps it out, and the log says so every 30 s.
func (n *Node) join(seeds []string) {
	var warned time.Time
	for {
		_, err := n.members.Join(n.ctx, seeds)
		if err == nil || n.ctx.Err() != nil {
			return
		}
		if !errors.Is(err, membership.ErrDuplicateID) {
			n.logger.Warn("could not join the cluster through the join seeds", "seeds", seeds, "err", err)
			return
		}
		if time.Since(warned) >= 30*time.Second {
			warned = time.Now()
			n.logger.Warn("the cluster holds this node id alive at another address; retrying until it is declared down (another node with the same id keeps this one out)",
				"seeds", seeds, "err", err)
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(joinRetry):
		}
	}
}

// onMemberEvent runs on membership's event goroutine.
func (n *Node) onMemberEvent(ev membership.Event) {
	n.logger.Debug("membership", "kind", ev.Kind, "node", ev.Node.ID)
	if ev.Node.ID != n.cfg.NodeID && ev.Node.RaftAddr != "" {
		switch ev.Kind {
		case membership.EventJoin, membership.EventUpdate:
			n.host.WatchPeer(ev.Node.ID, ev.Node.RaftAddr)
		case membership.EventLeave:
			n.host.UnwatchPeer(ev.Node.RaftAddr)
		}
	}
	n.noteDiskFull(ev)
	n.noteCleanerBuild(ev)
	n.down.note(ev, time.Now())
	select {
	case n.memberCh <- struct{}{}:
	default:
	}
}

// ID is the node id.
func (n *Node) ID() int32 { return n.cfg.NodeID }

// KafkaAddr is the address Kafka clients connect to.
func (n *Node) KafkaAddr() string { return n.cfg.AdvertisedKafkaAddr }

// Listeners are the node's Kafka listeners, with the addresses they are
// bound to (port 0 resolved).
func (n *Node) Listeners() []ListenerConfig {
	out := slices.Clone(n.cfg.Listeners)
	for i := range out {
		if i < len(n.kafkaLns) {
			out[i].Addr = n.kafkaLns[i].Addr().String()
		}
	}
	return out
}

// RaftAddr is the address of the node's Raft and internal RPC port.
func (n *Node) RaftAddr() string { return n.cfg.AdvertisedRaftAddr }

// GossipAddr is the bound gossip address (for other nodes' join lists).
func (n *Node) GossipAddr() string { return n.members.LocalAddr() }

// RaftStats are the counters of the node's Raft port: sessions, calls and
// coalesced heartbeats sent and received.
func (n *Node) RaftStats() multiraft.Stats { return n.host.Stats() }

// WaitReady blocks until the node knows the cluster (the metadata group has
// a leader, this node is registered, and its metadata replica has applied
// every entry it knows to be committed, as Ready requires) or ctx ends. A
// restarted node that serves before that may not know a topic yet.
func (n *Node) WaitReady(ctx context.Context) error {
	for {
		s := n.meta.State()
		_, registered := s.Broker(n.cfg.NodeID)
		if s.Initialized() && s.HasProducerIDKey() && registered && n.meta.LeaderID() >= 0 && n.metadataBehind() == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.meta.Watch():
		case <-time.After(n.cfg.Tuning.ReadyPoll):
		}
	}
}

// Shutdown stops the node gracefully: it hands the leadership of its
// partitions and of the metadata group to other replicas (bounded by ctx),
// stops the Kafka listener, closes every Raft group and store, leaves the
// gossip cluster and closes the Raft port. Safe to call more than once.
func (n *Node) Shutdown(ctx context.Context) error {
	return n.stop(ctx, true)
}

// Halt stops the node without handing anything over: its Raft port goes
// silent first, as if the process had died. Tests use it to stand in for a
// crash; data written so far stays on disk as after a kill -9.
func (n *Node) Halt() { n.stop(context.Background(), false) }

// PartitionLeader reports the leader and leader epoch of a partition as
// this node sees them (its own replica if it has one, else the metadata).
func (n *Node) PartitionLeader(topic string, p int32) (leader, epoch int32, ok bool) {
	return n.backend.PartitionLeader(topic, p)
}

// stop shuts down; graceful hands leaderships away first, otherwise the
// Raft port closes first, so that to the others the node just goes silent
// (tests use it to stand in for a crash).
func (n *Node) stop(ctx context.Context, graceful bool) error {
	n.shutdownOnce.Do(func() {
		var errs []error
		if n.reps != nil {
			// A produce waiting on a failing disk would hold up the Kafka
			// server's close for as long as the disk fails.
			for _, lr := range n.reps.All() {
				lr.Partition().StopStorageRetries()
			}
		}
		if !graceful && n.host != nil {
			n.host.Close()
		}
		if graceful && n.host != nil {
			n.host.HandOver(ctx)
		}
		if n.kafka != nil {
			errs = append(errs, n.kafka.Close())
		} else {
			for _, ln := range n.kafkaLns {
				ln.Close()
			}
		}
		n.cancel()
		if n.housekeepingDone != nil {
			<-n.housekeepingDone // its proposals need running groups
		}
		if n.coords != nil {
			n.coords.Close() // before the replicas, whose groups resolve the coordinators' writes
		}
		if n.reps != nil {
			errs = append(errs, n.reps.Close())
		}
		if n.meta != nil {
			errs = append(errs, n.meta.Close())
		}
		if n.members != nil {
			if graceful {
				lctx, cancel := context.WithTimeout(ctx, n.cfg.Tuning.GossipLeave)
				if err := n.members.Leave(lctx); err != nil {
					n.logger.Debug("gossip leave", "err", err)
				}
				cancel()
			}
			errs = append(errs, n.members.Shutdown())
		}
		if n.host != nil && graceful {
			errs = append(errs, n.host.Close())
		}
		n.wg.Wait()
		if n.coords != nil {
			n.coords.Wait()
		}
		n.shutdownErr = errors.Join(errs...)
		if n.started {
			n.logger.Info("node stopped")
		} else {
			n.logger.Debug("failed start cleaned up", "err", n.shutdownErr)
		}
	})
	return n.shutdownErr
}

func (n *Node) partitionsDir() string { return filepath.Join(n.cfg.DataDir, "partitions") }

// raftLogDir holds the node-wide Raft log store of pebble partitions.
func (n *Node) raftLogDir() string { return filepath.Join(n.cfg.DataDir, "raftlog") }
