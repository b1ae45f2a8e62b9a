package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/minikafka/minikafka-go/internal/diskguard"
	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metrics"
	"github.com/minikafka/minikafka-go/multiraft"
)

// The data disk's reserve. A node watches the free space of the disk that
// holds its data directory (internal/diskguard): below the reserve it
// refuses produce and new partitions with KAFKA_STORAGE_ERROR, and
// gossips that its disk is full, so that the leaders of the partitions it
// replicates refuse their produce too (the replicas of a partition fill
// together). Reads, DeleteRecords, DeleteTopics, retention, compaction,
// offset commits and transaction markers go on, so space can be freed
// through Kafka; produce resumes by itself once it is. The reserve always
// holds what the node writes to start and what the Raft log store may
// still write after its groups stop taking entries, so a node on a full
// disk restarts.

// StorageConfig is the data disk's reserve and alert thresholds, under
// Redpanda's names.
type StorageConfig struct {
	// MinFreeBytes is the reserve (storage_min_free_bytes); 0 means
	// MinFreePercent of the disk, at most 5 GiB. Never below what the
	// node needs to restart (startupReserve).
	MinFreeBytes int64
	// MinFreePercent is the reserve in percent of the disk when
	// MinFreeBytes is 0 (storage_min_free_percent).
	MinFreePercent float64
	// AlertFreeBytes and AlertFreePercent: below the larger of the two
	// the disk counts as low (storage_space_alert_free_threshold_bytes,
	// _percent), on /metrics, the status page and in the log.
	AlertFreeBytes   int64
	AlertFreePercent float64
}

// DefaultStorage is a reserve of 5% of the disk (at most 5 GiB) and an
// alert below 10% free.
func DefaultStorage() StorageConfig {
	return StorageConfig{MinFreePercent: 5, AlertFreePercent: 10}
}

func (s StorageConfig) validate() error {
	switch {
	case s.MinFreeBytes < 0:
		return bad("storage_min_free_bytes", s.MinFreeBytes, "must not be negative")
	case s.MinFreePercent < 0 || s.MinFreePercent > 50:
		return bad("storage_min_free_percent", s.MinFreePercent, "must be in 0..50")
	case s.AlertFreeBytes < 0:
		return bad("storage_space_alert_free_threshold_bytes", s.AlertFreeBytes, "must not be negative")
	case s.AlertFreePercent < 0 || s.AlertFreePercent > 90:
		return bad("storage_space_alert_free_threshold_percent", s.AlertFreePercent, "must be in 0..90")
	}
	return nil
}

// startupSlack is what a node writes to start besides the Raft log
// store's headroom (replica files, FSM checkpoints, the metadata store).
const startupSlack = 2 << 20

// ErrPeerDiskFull is wrapped by the refusal of a batch for a partition
// that a node with a full disk replicates; it wraps the same Kafka error
// as a refusal for this node's own disk.
var ErrPeerDiskFull = fmt.Errorf("broker: a replica's disk is below its reserve: %w", diskguard.ErrBelowReserve)

// openDiskGuard looks at the data disk, sizes the Raft log store and the
// trimming of partitions' Raft logs to it, and makes the node's guard.
func (n *Node) openDiskGuard() error {
	stat := n.cfg.DiskStat
	if stat == nil {
		stat = diskguard.Statfs
	}
	u, err := stat(n.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("broker: data_dir %s: %w", n.cfg.DataDir, err)
	}
	n.logMemTable = multiraft.LogMemTableFor(u.Total)
	// A partition's Raft log duplicates what its log holds: on a small
	// disk it is trimmed sooner.
	t := &n.cfg.PartitionRaft
	if t.SnapshotBytes > 0 {
		t.SnapshotBytes = max(min(t.SnapshotBytes, u.Total/32), 64<<10)
		t.TrailingBytes = min(t.TrailingBytes, u.Total/128)
	}
	s := n.cfg.Storage
	n.disk, err = diskguard.New(diskguard.Config{Dir: n.cfg.DataDir, MinFreeBytes: s.MinFreeBytes, MinFreePercent: s.MinFreePercent,
		Floor: multiraft.LogStoreHeadroom(n.logMemTable) + startupSlack, AlertFreeBytes: s.AlertFreeBytes,
		AlertFreePercent: s.AlertFreePercent, Interval: n.cfg.Tuning.DiskCheckInterval, Stat: stat,
		OnChange: n.onDiskChange, Logger: n.logger})
	if err != nil {
		return err
	}
	if st := n.disk.State(); st.Refusing {
		n.logger.Warn("data disk below its reserve at start: produce and new partitions are refused until space is freed",
			"free", st.Free, "reserve", st.Reserve, "total", st.Total)
	}
	return nil
}

// onDiskChange gossips whether this node's disk is full; it runs on the
// guard's goroutine.
func (n *Node) onDiskChange(st diskguard.State) {
	if n.members == nil {
		return
	}
	meta := n.members.Local()
	if meta.DiskFull == st.Refusing {
		return
	}
	meta.DiskFull = st.Refusing
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Tuning.GossipLeave)
	defer cancel()
	if err := n.members.UpdateMeta(ctx, meta); err != nil && n.ctx.Err() == nil {
		n.logger.Warn("could not gossip the data disk's state", "disk_full", st.Refusing, "err", err)
	}
}

// noteDiskFull records whether the node of a membership event gossips a
// full disk; it runs on membership's event goroutine.
func (n *Node) noteDiskFull(ev membership.Event) {
	n.fullNodes.set(ev.Node.ID, ev.Node.DiskFull && n.otherAlive(ev))
}

// admitBatch is a partition replica's ReplicaConfig.Admit: a client's
// batch is refused while this node's disk, or that of another replica of
// the partition, is below its reserve.
func (n *Node) admitBatch(lr *localReplica) func(size int) error {
	return func(size int) error {
		if err := n.disk.Admit(size); err != nil {
			return err
		}
		full := n.fullNodes.list()
		if len(full) == 0 {
			return nil
		}
		for _, m := range lr.Partition().Group().Members() {
			if slices.Contains(full, m) {
				return fmt.Errorf("%w: node %d", ErrPeerDiskFull, m)
			}
		}
		return nil
	}
}

// refuseNewPartitions is why a topic or partition may not be created now
// (a disk below its reserve: the new replicas would need room), or nil.
func (n *Node) refuseNewPartitions() error {
	if err := n.disk.Admit(0); err != nil {
		return err
	}
	if full := n.fullNodes.list(); len(full) > 0 {
		return fmt.Errorf("%w: node %d", ErrPeerDiskFull, full[0])
	}
	return nil
}

// ErrDiskFull is what Ready reports while the node refuses produce for
// its disk.
var ErrDiskFull = errors.New("data disk below its reserve: produce and new partitions are refused")

// diskReady is Ready's check of the disk and the Raft log store.
func (n *Node) diskReady() error {
	if n.disk == nil {
		return nil
	}
	if st := n.disk.State(); st.Refusing {
		return fmt.Errorf("%w (%d bytes free, reserve %d)", ErrDiskFull, st.Free, st.Reserve)
	}
	if err := n.host.LogStoreErr(); err != nil {
		return fmt.Errorf("raft log store refuses writes: %w", err)
	}
	return nil
}

// diskMetrics is the disk as /metrics and the status page show it.
func (n *Node) diskMetrics() metrics.Disk {
	if n.disk == nil {
		return metrics.Disk{}
	}
	st := n.disk.State()
	return metrics.Disk{Total: st.Total, Free: st.Free, Reserve: st.Reserve, AlertAt: st.AlertAt,
		Refusing: st.Refusing, Low: st.Low, LogStoreErr: n.host.LogStoreErr()}
}
