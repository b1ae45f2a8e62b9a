package broker

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/metrics"
	"github.com/minikafka/minikafka-go/multiraft"
	"github.com/minikafka/minikafka-go/partition"
)

// AdminHandler serves the node's metrics, health endpoints and status
// page (metrics.Handler), and the web console under /console/; cmd/node
// serves it on admin_addr.
func (n *Node) AdminHandler() http.Handler { return n.withConsole(metrics.Handler(n.metrics, n.admin)) }

// Errors Ready reports; each says what the node still waits for.
var (
	ErrNotJoined        = errors.New("not yet part of an initialized cluster with a controller")
	ErrMetadataBehind   = errors.New("metadata not caught up")
	ErrReplicasNotOpen  = errors.New("local partition replicas not all open")
	ErrShuttingDown     = errors.New("shutting down")
	errAdminUnavailable = errors.New("node not started")
)

// Ready returns nil when the node serves: it has joined an initialized
// cluster that has a controller, its metadata replica has applied every
// entry it knows to be committed, and every partition replica the
// metadata assigns to it is open.
func (n *Node) Ready() error {
	if n.ctx.Err() != nil {
		return ErrShuttingDown
	}
	if n.meta == nil || n.reps == nil {
		return errAdminUnavailable
	}
	s := n.meta.State()
	if _, registered := s.Broker(n.cfg.NodeID); !s.Initialized() || !registered || n.meta.LeaderID() < 0 {
		return ErrNotJoined
	}
	if err := n.metadataBehind(); err != nil {
		return err
	}
	missing := 0
	for _, p := range s.PartitionsOn(n.cfg.NodeID) {
		if _, ok := n.reps.Get(p.Topic, p.Partition); !ok {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("%w: %d to open", ErrReplicasNotOpen, missing)
	}
	return n.diskReady()
}

// metadataBehind is ErrMetadataBehind while the metadata replica has not
// applied every entry it knows to be committed (replicaBehind).
func (n *Node) metadataBehind() error { return replicaBehind(n.meta.Replication()) }

// replicaBehind is ErrMetadataBehind while r may have committed entries
// still to apply (multiraft.Replication.Behind): raft's applied index, not
// the FSM's, since no-op and configuration entries never reach the FSM.
// Until then an entry after the replica's snapshot, an ACL for one, may
// be unapplied.
func replicaBehind(r multiraft.Replication) error {
	if r.Behind() {
		return fmt.Errorf("%w: applied index %d, commit index %d, leader's commit index %d",
			ErrMetadataBehind, r.AppliedIndex, r.CommitIndex, r.LeaderCommit)
	}
	return nil
}

// adminSource is what the metrics registry and the admin pages read of
// the node. The registry is made before the node's parts (the Raft port
// reports its commits to it), so until started hands them over State
// reports the node id alone.
type adminSource struct {
	nodeID int32
	// cleanInternal: the internal topics are compacted (their dirt is
	// reported).
	cleanInternal bool
	ready         func() error
	parts         atomic.Pointer[adminParts] // nil until started
}

// adminParts are the node's running parts the admin pages read.
type adminParts struct {
	cluster interface {
		Cluster() kafkaapi.ClusterView
		Reassignments() ([]kafkaapi.Reassignment, error)
	}
	replicas func() []*localReplica
	kafka    *kafkaapi.Server
	host     *multiraft.Host
	disk     func() metrics.Disk
}

var _ metrics.Source = (*adminSource)(nil)

// newAdminSource makes the source of node n before its parts exist.
func newAdminSource(n *Node) *adminSource {
	return &adminSource{nodeID: n.cfg.NodeID, cleanInternal: n.cfg.CleanInternalTopics,
		ready: n.Ready}
}

// started hands the source the node's parts, once its Kafka server exists.
func (a *adminSource) started(n *Node) {
	a.parts.Store(&adminParts{cluster: n.backend, replicas: n.reps.All, kafka: n.kafka, host: n.host, disk: n.diskMetrics})
}

// Ready is the node's Ready.
func (a *adminSource) Ready() error { return a.ready() }

// State reads the node's state for one scrape or page.
func (a *adminSource) State() metrics.State {
	s := metrics.State{NodeID: a.nodeID, ControllerID: -1}
	p := a.parts.Load()
	if p == nil {
		return s
	}
	view := p.cluster.Cluster()
	s.ClusterID, s.ControllerID = view.ClusterID, view.ControllerID
	for _, b := range view.Brokers {
		s.Brokers = append(s.Brokers, metrics.Broker{ID: b.NodeID, Addr: net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), Up: true})
	}
	for _, d := range view.Down {
		s.Brokers = append(s.Brokers, metrics.Broker{ID: d.NodeID, DownSince: d.Since})
	}
	slices.SortFunc(s.Brokers, func(x, y metrics.Broker) int { return cmp.Compare(x.ID, y.ID) })
	reps := p.replicas()
	slices.SortFunc(reps, func(x, y *localReplica) int {
		return cmp.Or(cmp.Compare(x.Info().Topic, y.Info().Topic), cmp.Compare(x.Info().Partition, y.Info().Partition))
	})
	ends := map[tp]int64{}
	now := time.Now()
	for _, lr := range reps {
		r := lr.Partition()
		rm := metrics.Replica{Topic: lr.Info().Topic, Partition: lr.Info().Partition, Traffic: lr.Traffic().Counts(),
			LogSize: r.LogSize(), LogStart: r.LogStartOffset(), LogEnd: r.HighWatermark(),
			Replication: r.Group().Replication(), Cleaner: cleanerCounts(r), Dirt: dirt(lr, now, a.cleanInternal)}
		ends[tp{lr.Info().Topic, lr.Info().Partition}] = rm.LogEnd
		s.Replicas = append(s.Replicas, rm)
	}
	s.Topics = topicsView(view.Topics)
	markUnderReplicated(s.Replicas, view.Topics)
	s.Groups = groupOffsets(reps, ends, false)
	moves, _ := p.cluster.Reassignments() // never fails
	for _, m := range moves {
		s.Moves = append(s.Moves, metrics.Move{Topic: m.Topic, Partition: m.Partition, Replicas: m.Replicas,
			Adding: m.Adding, Removing: m.Removing})
	}
	c := p.kafka.Connections()
	s.Conns = metrics.Conns{Open: c.Open, Accepted: c.Accepted, Refused: c.Refused}
	r := p.kafka.Requests()
	s.Requests = metrics.Requests{Panics: r.Panics, QueuedBytes: r.QueuedBytes, QueuedBytesMax: r.QueuedBytesMax,
		QueuedWaiting: r.QueuedWaiting}
	s.LeaderChanges = p.host.Stats().LeaderChanges
	s.WALFsync = p.host.WALFsyncLatency()
	s.LogStalls = p.host.LogStoreStalls()
	s.LogBudget = p.host.LogBudget()
	s.Disk = p.disk()
	return s
}

// groupOffsets lists the committed offsets of the groups whose
// __consumer_offsets partition this node leads (every replica it holds,
// with all), with the end offsets of the partitions it holds (-1
// elsewhere).
func groupOffsets(reps []*localReplica, ends map[tp]int64, all bool) []metrics.GroupOffset {
	var out []metrics.GroupOffset
	for _, lr := range reps {
		if lr.Extra().View() == nil || (!all && !lr.Partition().IsLeader()) {
			continue
		}
		for _, g := range lr.Extra().View().Groups() {
			for _, o := range lr.Extra().View().Offsets(g) {
				end, ok := ends[tp{o.Topic, o.Partition}]
				if !ok {
					end = -1
				}
				out = append(out, metrics.GroupOffset{Group: g, Topic: o.Topic, Partition: o.Partition,
					Committed: o.Offset.Offset, End: end})
			}
		}
	}
	return out
}

// topicsView is the cluster view's topics; their ISRs are the backend's
// (kafkabackend.Backend.Cluster), which Metadata answers too.
func topicsView(topics []kafkaapi.TopicView) []metrics.Topic {
	out := make([]metrics.Topic, 0, len(topics))
	for _, t := range topics {
		mt := metrics.Topic{Name: t.Name, Internal: t.Internal || metadata.IsInternal(t.Name)}
		for _, p := range t.Partitions {
			mt.Partitions = append(mt.Partitions, metrics.PartitionView{Partition: p.Partition, Leader: p.Leader,
				Replicas: p.Replicas, ISR: p.ISR})
		}
		out = append(out, mt)
	}
	return out
}

// markUnderReplicated marks the replicas this node leads whose partition's
// ISR in the cluster view lacks a replica.
func markUnderReplicated(reps []metrics.Replica, topics []kafkaapi.TopicView) {
	short := map[tp]bool{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			short[tp{t.Name, p.Partition}] = len(p.ISR) < len(p.Replicas)
		}
	}
	for i := range reps {
		r := &reps[i]
		r.UnderReplicated = r.Replication.Leader && short[tp{r.Topic, r.Partition}]
	}
}

// dirt is how far the cleaner is behind on a replica, where this node
// leads a partition of a compacted topic, else nil.
func dirt(lr *localReplica, now time.Time, internal bool) *metrics.Dirt {
	ratio, ok := lr.DirtyRatio(now, internal)
	if !ok {
		return nil
	}
	lag, _ := lr.CleanerLag(now, internal)
	return &metrics.Dirt{Ratio: ratio, Lag: lag}
}

// cleanerCounts are a replica's cleanings, for the metrics.
func cleanerCounts(r *partition.Replica) metrics.CleanerCounts {
	n, st := r.Cleanings()
	return metrics.CleanerCounts{Cleanings: int64(n), BytesRead: st.BytesIn, BytesWritten: st.BytesOut,
		TombstonesRemoved: int64(st.TombstonesRemoved), MapFull: int64(st.MapFull)}
}
