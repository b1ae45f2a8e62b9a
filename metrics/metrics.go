package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/multiraft"
)

const namespace = "minikafka"

// Registry holds one node's metrics: the histograms its components feed
// through the hooks, and a collector that reads a Source at scrape time.
type Registry struct {
	reg      *prometheus.Registry
	requests *prometheus.HistogramVec
	// byKey caches requests' observer of each API key (int16 ->
	// prometheus.Observer), so that a request costs no label lookup.
	byKey   sync.Map
	commits prometheus.Histogram
	fsyncs  prometheus.Histogram
}

// New returns a node's Registry, with the Go runtime and process
// collectors. src is read at every scrape.
func New(src Source) *Registry {
	r := &Registry{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "kafka_request_duration_seconds",
			Help:    "Time from reading a Kafka request to writing its response, by API.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14), // 0.1 ms .. 15 s
		}, []string{"api"}),
		commits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "raft_commit_duration_seconds",
			Help:    "Time from proposing a command to a partition or metadata Raft group to its commit and apply on the leader.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
		}),
		fsyncs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "log_fsync_duration_seconds",
			Help:    "Duration of each fsync of a partition log's segment or index file.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2.5, 14), // 50 µs .. 7 s
		}),
	}
	r.reg.MustRegister(r.requests, r.commits, r.fsyncs,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&collector{src: src})
	return r
}

// Gatherer is the registry Handler serves.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// RequestDone observes one Kafka request (kafkaapi.RequestObserver).
func (r *Registry) RequestDone(key int16, elapsed time.Duration) {
	o, ok := r.byKey.Load(key)
	if !ok {
		o, _ = r.byKey.LoadOrStore(key, r.requests.WithLabelValues(kmsg.NameForKey(key)))
	}
	o.(prometheus.Observer).Observe(elapsed.Seconds())
}

// ObserveCommit observes one committed proposal (multiraft.Config.OnCommit).
func (r *Registry) ObserveCommit(d time.Duration) { r.commits.Observe(d.Seconds()) }

// ObserveFsync observes one partition log fsync (seglog.Options.OnFsync).
func (r *Registry) ObserveFsync(d time.Duration) { r.fsyncs.Observe(d.Seconds()) }

// Source is what the collector and the pages read of a node.
type Source interface {
	// Ready returns nil when the node serves (joined, metadata caught up,
	// every local replica open), else the reason it does not yet.
	Ready() error
	// State is the node's state now.
	State() State
}

// State is what a node reports at a scrape.
type State struct {
	NodeID       int32
	ClusterID    string
	ControllerID int32 // -1 if unknown
	Brokers      []Broker
	// Topics is the cluster's view of every topic, sorted by name.
	Topics []Topic
	// Replicas are this node's partition replicas.
	Replicas []Replica
	// Groups are the committed offsets of the groups this node
	// coordinates.
	Groups []GroupOffset
	// Moves are the partition reassignments in progress, sorted by topic
	// then partition.
	Moves []Move
	Conns Conns
	// Requests are the Kafka listener's request counts.
	Requests Requests
	// LeaderChanges counts the leaderships this node's Raft groups gained
	// or lost.
	LeaderChanges uint64
	// WALFsync is the Raft log store's fsync histogram in nanoseconds, or
	// nil (multiraft.Host.WALFsyncLatency).
	WALFsync prometheus.Histogram
	// LogStalls is what the Raft log store's write stalls cost so far
	// (multiraft.Host.LogStoreStalls).
	LogStalls multiraft.WriteStalls
	// LogBudget is the node-wide Raft log budget (multiraft.Host.LogBudget).
	LogBudget multiraft.LogBudget
	// Disk is the data disk's space; zero Total when unknown.
	Disk Disk
}

// Disk is the space of the filesystem holding a node's data directory,
// in bytes, and what the node makes of it (storage_min_free_bytes,
// storage_space_alert_free_threshold_*).
type Disk struct {
	Total, Free int64
	Reserve     int64 // below this much free space, growth is refused
	AlertAt     int64 // below this much free space, the disk is low
	Refusing    bool  // produce and new partitions are refused
	Low         bool
	// LogStoreErr is the Raft log store's failure, if it failed.
	LogStoreErr error
}

// Alert is Redpanda's storage_disk_free_space_alert: 0 when there is
// room, 1 when the disk is low, 2 when growth is refused (degraded).
func (d Disk) Alert() int {
	switch {
	case d.Refusing || d.LogStoreErr != nil:
		return 2
	case d.Low:
		return 1
	}
	return 0
}

// Move is a partition reassignment in progress.
type Move struct {
	Topic                      string
	Partition                  int32
	Replicas, Adding, Removing []int32
}

// Broker is a registered broker: a live one with its address, or one
// this node sees down, with since when.
type Broker struct {
	ID        int32
	Addr      string
	Up        bool
	DownSince time.Time
}

// Topic is a topic of the cluster view.
type Topic struct {
	Name       string
	Internal   bool
	Partitions []PartitionView
}

// PartitionView is a partition as the cluster view shows it.
type PartitionView struct {
	Partition int32
	Leader    int32 // -1: none
	Replicas  []int32
	ISR       []int32
}

// Replica is one of this node's partition replicas.
type Replica struct {
	Topic     string
	Partition int32
	Traffic   TrafficCounts
	LogSize   int64
	// LogStart and LogEnd are the log start offset and the high
	// watermark (the end of the committed, applied log).
	LogStart, LogEnd int64
	Replication      multiraft.Replication
	// UnderReplicated: this node leads the partition and its ISR lacks a
	// replica (the cluster view's, which Metadata answers too).
	UnderReplicated bool
	// Cleaner counts this replica's cleanings (cleanup.policy=compact).
	Cleaner CleanerCounts
	// Dirt is how far the cleaner is behind, where this node leads a
	// partition of a compacted topic; nil elsewhere.
	Dirt *Dirt
}

// Dirt is how far the cleaner is behind on a partition this node leads,
// below the point a cleaning may reach now: the dirty ratio it weighs
// against min.cleanable.dirty.ratio (bytes not cleaned since this node
// leads over all the bytes), and the age of the first dirty record, which
// max.compaction.lag.ms bounds (0 when none is dirty).
type Dirt struct {
	Ratio float64
	Lag   time.Duration
}

// CleanerCounts are a replica's cleanings: how many ran, the bytes they
// read and wrote, the tombstones they removed, and how many their map's
// bound ended early.
type CleanerCounts struct {
	Cleanings, BytesRead, BytesWritten, TombstonesRemoved, MapFull int64
}

// GroupOffset is a group's committed offset of one partition; End is the
// partition's log end offset where this node holds a replica of it, else
// -1 (no lag is reported then).
type GroupOffset struct {
	Group     string
	Topic     string
	Partition int32
	Committed int64
	End       int64
}

// Conns are the Kafka listener's connection counts.
type Conns struct {
	Open              int
	Accepted, Refused uint64
}

// Requests are the Kafka listener's request counts.
type Requests struct {
	// Panics counts requests whose handling panicked; each closed its
	// connection.
	Panics uint64
	// QueuedBytes is what the requests read and not yet answered hold of
	// the queued_max_request_bytes budget, QueuedBytesMax the budget, and
	// QueuedWaiting the connections waiting for room in it.
	QueuedBytes, QueuedBytesMax int64
	QueuedWaiting               int
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
