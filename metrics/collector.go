package metrics

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(namespace+"_"+name, help, labels, nil)
}

var (
	tp = []string{"topic", "partition"}

	descProducedRecords = desc("partition_produced_records_total", "Records appended to the partition through this node while it led (acknowledged produces).", tp...)
	descProducedBytes   = desc("partition_produced_bytes_total", "Record batch bytes appended to the partition through this node while it led.", tp...)
	descFetchedRecords  = desc("partition_fetched_records_total", "Data records returned to consumers' Fetch requests from this node's replica.", tp...)
	descFetchedBytes    = desc("partition_fetched_bytes_total", "Record batch bytes returned to consumers' Fetch requests from this node's replica.", tp...)
	descLogSize         = desc("partition_log_size_bytes", "Size of this node's replica's log segments.", tp...)
	descLogStart        = desc("partition_log_start_offset", "Log start offset of this node's replica.", tp...)
	descCleanings       = desc("partition_cleanings_total", "Cleanings (cleanup.policy=compact) this node's replica has run.", tp...)
	descCleanerRead     = desc("partition_cleaner_read_bytes_total", "Bytes of record batches this node's replica's cleanings read.", tp...)
	descCleanerWritten  = desc("partition_cleaner_written_bytes_total", "Bytes of record batches this node's replica's cleanings kept (wrote back).", tp...)
	descTombstonesGone  = desc("partition_cleaner_tombstones_removed_total", "Tombstones this node's replica's cleanings removed after delete.retention.ms.", tp...)
	descCleanerMapFull  = desc("partition_cleaner_map_full_total", "Cleanings of this node's replica that its map of keys (log_cleaner_dedupe_buffer_size over log_cleaner_threads) ended before their range's end: the log took more passes.", tp...)
	descDirtyRatio      = desc("partition_dirty_ratio", "On the leader of a compacted partition: bytes of the log past where this replica's cleanings left it clean over all its bytes, below the point a cleaning may reach (weighed against min.cleanable.dirty.ratio).", tp...)
	descCleanerLag      = desc("partition_cleaner_lag_seconds", "On the leader of a compacted partition: age of the first dirty record below the point a cleaning may reach (bounded by max.compaction.lag.ms), 0 when none is dirty.", tp...)
	descLogEnd          = desc("partition_log_end_offset", "High watermark of this node's replica: the offset after its last committed record.", tp...)
	descLeader          = desc("partition_leader", "1 if this node leads the partition, else 0.", tp...)
	descURP             = desc("partition_under_replicated", "1 if this node leads the partition and its ISR lacks a replica (down, silent or behind for longer than replica_lag_time_max), else 0.", tp...)
	descReplicaLag      = desc("partition_replica_lag_entries", "Raft entries a follower's matched log is behind the leader's commit index (reported by the leader).", "topic", "partition", "replica")
	descURPCount        = desc("under_replicated_partitions", "Partitions this node leads that are under-replicated.")
	descBrokerUp        = desc("broker_up", "1 if this node sees the registered broker alive (gossip), 0 if it sees it down.", "broker")
	descBrokerDownSince = desc("broker_down_since_timestamp_seconds", "Unix time since which this node has seen the registered broker down (only while down).", "broker")
	descOffline         = desc("offline_partitions", "Partitions with no leader, as this node sees the cluster.")
	descLeaderCount     = desc("leader_partitions", "Partitions this node leads.")
	descLeaderChanges   = desc("raft_leader_changes_total", "Times a Raft group on this node gained or lost the leadership.")
	descGroupCommitted  = desc("group_committed_offset", "Committed offset of a consumer group, reported by its coordinator.", "group", "topic", "partition")
	descGroupLag        = desc("group_lag_records", "Log end offset minus the committed offset of a consumer group, reported by its coordinator where it holds a replica of the partition.", "group", "topic", "partition")
	descConns           = desc("kafka_connections", "Kafka client connections open.")
	descConnsAccepted   = desc("kafka_connections_accepted_total", "Kafka client connections accepted.")
	descConnsRefused    = desc("kafka_connections_refused_total", "Kafka client connections closed at once for passing max_connections or max_connections_per_ip.")
	descRequestPanics   = desc("kafka_request_panics_total", "Kafka requests whose decoding, start or answer panicked; each closed its connection, not the node.")
	descQueued          = desc("kafka_queued_request_bytes", "Bytes of Kafka requests read and not yet answered, with what decoding and serving them costs: what they hold of queued_max_request_bytes.")
	descQueuedMax       = desc("kafka_queued_request_bytes_max", "The queued_max_request_bytes budget.")
	descQueuedWaiting   = desc("kafka_queued_request_waiting", "Kafka connections that stopped reading to wait for room in queued_max_request_bytes.")
	descLogStalls       = desc("raft_log_write_stalls_total", "Write stalls of the node-wide Raft log store (pebble): while one lasts no partition on the node commits.")
	descLogStallTime    = desc("raft_log_write_stall_seconds_total", "Time the node-wide Raft log store's ended write stalls lasted.")
	descBudgetHeld      = desc("raft_log_budget_bytes", "Bytes of Raft entries the partition groups sharing the node-wide Raft log store (pebble) hold together.")
	descBudgetLimit     = desc("raft_log_budget_limit_bytes", "What they may hold together: a quarter of the store's memtable; past it the group holding most trims first.")
	descBudgetTrims     = desc("raft_log_budget_trims_total", "Trims (snapshots) the node-wide Raft log budget asked of the group holding most.")
	descWALFsync        = desc("raft_wal_fsync_duration_seconds", "Duration of each fsync of the node-wide Raft log store's write-ahead log (pebble log store).")
	descReady           = desc("ready", "1 if /readyz answers 200, else 0.")
	descDiskTotal       = desc("storage_disk_total_bytes", "Size of the filesystem holding the node's data directory.")
	descDiskFree        = desc("storage_disk_free_bytes", "Free space of the filesystem holding the node's data directory (what an unprivileged writer may use).")
	descDiskReserve     = desc("storage_disk_min_free_bytes", "The reserve: below this much free space the node refuses produce and new partitions with KAFKA_STORAGE_ERROR (storage_min_free_bytes).")
	descDiskAlertAt     = desc("storage_disk_alert_free_bytes", "Below this much free space the disk counts as low (storage_space_alert_free_threshold_*).")
	descDiskAlert       = desc("storage_disk_free_space_alert", "0: enough free space; 1: low (below the alert threshold); 2: degraded (below the reserve, or the Raft log store failed): produce is refused.")
)

// collector reads a Source at each scrape.
type collector struct {
	src Source
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descProducedRecords, descProducedBytes, descFetchedRecords, descFetchedBytes,
		descLogSize, descLogStart, descLogEnd, descLeader, descURP, descReplicaLag, descURPCount, descLeaderCount,
		descLeaderChanges, descGroupCommitted, descGroupLag, descConns, descConnsAccepted, descConnsRefused,
		descRequestPanics, descQueued, descQueuedMax, descQueuedWaiting, descLogStalls, descLogStallTime, descWALFsync, descReady,
		descBudgetHeld, descBudgetLimit, descBudgetTrims,
		descDiskTotal, descDiskFree, descDiskReserve, descDiskAlertAt, descDiskAlert,
		descCleanings, descCleanerRead, descCleanerWritten, descTombstonesGone, descCleanerMapFull, descDirtyRatio, descCleanerLag,
		descBrokerUp, descBrokerDownSince, descOffline} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.State()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	var urps, leads int
	for _, r := range s.Replicas {
		p := itoa(r.Partition)
		counter(descProducedRecords, float64(r.Traffic.ProducedRecords), r.Topic, p)
		counter(descProducedBytes, float64(r.Traffic.ProducedBytes), r.Topic, p)
		counter(descFetchedRecords, float64(r.Traffic.FetchedRecords), r.Topic, p)
		counter(descFetchedBytes, float64(r.Traffic.FetchedBytes), r.Topic, p)
		gauge(descLogSize, float64(r.LogSize), r.Topic, p)
		gauge(descLogStart, float64(r.LogStart), r.Topic, p)
		gauge(descLogEnd, float64(r.LogEnd), r.Topic, p)
		cleanerSeries(ch, r, p)
		rep := r.Replication
		gauge(descLeader, b2f(rep.Leader), r.Topic, p)
		for _, f := range rep.Followers {
			lag := uint64(0)
			if rep.CommitIndex > f.Match {
				lag = rep.CommitIndex - f.Match
			}
			gauge(descReplicaLag, float64(lag), r.Topic, p, itoa(f.Node))
		}
		urp := r.UnderReplicated
		gauge(descURP, b2f(urp), r.Topic, p)
		if rep.Leader {
			leads++
		}
		if urp {
			urps++
		}
	}
	gauge(descURPCount, float64(urps))
	brokerSeries(gauge, s)
	gauge(descLeaderCount, float64(leads))
	counter(descLeaderChanges, float64(s.LeaderChanges))
	for _, g := range s.Groups {
		p := itoa(g.Partition)
		gauge(descGroupCommitted, float64(g.Committed), g.Group, g.Topic, p)
		if g.End >= 0 {
			gauge(descGroupLag, float64(max(g.End-g.Committed, 0)), g.Group, g.Topic, p)
		}
	}
	gauge(descConns, float64(s.Conns.Open))
	counter(descConnsAccepted, float64(s.Conns.Accepted))
	counter(descConnsRefused, float64(s.Conns.Refused))
	counter(descRequestPanics, float64(s.Requests.Panics))
	gauge(descQueued, float64(s.Requests.QueuedBytes))
	gauge(descQueuedMax, float64(s.Requests.QueuedBytesMax))
	gauge(descQueuedWaiting, float64(s.Requests.QueuedWaiting))
	counter(descLogStalls, float64(s.LogStalls.Count))
	counter(descLogStallTime, s.LogStalls.Time.Seconds())
	if b := s.LogBudget; b.Limit > 0 {
		gauge(descBudgetHeld, float64(b.Held))
		gauge(descBudgetLimit, float64(b.Limit))
		counter(descBudgetTrims, float64(b.Trims))
	}
	if h := walFsync(s.WALFsync); h != nil {
		ch <- h
	}
	if d := s.Disk; d.Total > 0 {
		gauge(descDiskTotal, float64(d.Total))
		gauge(descDiskFree, float64(d.Free))
		gauge(descDiskReserve, float64(d.Reserve))
		gauge(descDiskAlertAt, float64(d.AlertAt))
		gauge(descDiskAlert, float64(d.Alert()))
	}
	gauge(descReady, b2f(c.src.Ready() == nil))
}

// brokerSeries reports each registered broker up or down, since when it
// is down, and the partitions without a leader, all as this node sees them.
func brokerSeries(gauge func(*prometheus.Desc, float64, ...string), s State) {
	for _, b := range s.Brokers {
		gauge(descBrokerUp, b2f(b.Up), itoa(b.ID))
		if !b.Up && !b.DownSince.IsZero() {
			gauge(descBrokerDownSince, float64(b.DownSince.UnixMilli())/1e3, itoa(b.ID))
		}
	}
	offline := 0
	for _, t := range s.Topics {
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				offline++
			}
		}
	}
	gauge(descOffline, float64(offline))
}

// cleanerSeries reports a replica's cleanings once it ran one, and how
// far the cleaner is behind where this node leads a compacted partition.
func cleanerSeries(ch chan<- prometheus.Metric, r Replica, p string) {
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
		ch <- prometheus.MustNewConstMetric(d, t, v, r.Topic, p)
	}
	if cl := r.Cleaner; cl.Cleanings > 0 {
		metric(descCleanings, prometheus.CounterValue, float64(cl.Cleanings))
		metric(descCleanerRead, prometheus.CounterValue, float64(cl.BytesRead))
		metric(descCleanerWritten, prometheus.CounterValue, float64(cl.BytesWritten))
		metric(descTombstonesGone, prometheus.CounterValue, float64(cl.TombstonesRemoved))
		metric(descCleanerMapFull, prometheus.CounterValue, float64(cl.MapFull))
	}
	if d := r.Dirt; d != nil {
		metric(descDirtyRatio, prometheus.GaugeValue, d.Ratio)
		metric(descCleanerLag, prometheus.GaugeValue, d.Lag.Seconds())
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// walBounds are the upper bounds, in seconds, that walFsync keeps of
// Pebble's fsync histogram (about a hundred buckets in nanoseconds): for
// each, the first of Pebble's bounds at or above it, so that every count
// stays exact.
var walBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// walFsync converts Pebble's nanosecond histogram to one in seconds with
// fewer buckets, or returns nil.
func walFsync(h prometheus.Histogram) prometheus.Metric {
	if h == nil {
		return nil
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil || m.Histogram == nil {
		return nil
	}
	src := m.Histogram
	buckets := map[float64]uint64{}
	i := 0
	for _, want := range walBounds {
		for i < len(src.Bucket) && src.Bucket[i].GetUpperBound()/1e9 < want {
			i++
		}
		if i == len(src.Bucket) || math.IsInf(src.Bucket[i].GetUpperBound(), 1) {
			break
		}
		buckets[src.Bucket[i].GetUpperBound()/1e9] = src.Bucket[i].GetCumulativeCount()
	}
	mh, err := prometheus.NewConstHistogram(descWALFsync, src.GetSampleCount(), src.GetSampleSum()/1e9, buckets)
	if err != nil {
		return nil
	}
	return mh
}
