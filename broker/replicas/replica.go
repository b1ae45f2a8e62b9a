package replicas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/metrics"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// Info is written next to each replica's data (replica.json) so that a
// restarting node can start its replicas before the metadata group is up.
type Info struct {
	Topic     string  `json:"topic"`
	TopicID   string  `json:"topic_id"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	// Join is set for a replica a reassignment added to a running group:
	// it must never bootstrap the group, even when reopened before it
	// received anything.
	Join bool `json:"join,omitempty"`
}

// Replica is one open replica with what the node needs to know of it. E is
// the node's own state kept with it (Extra).
type Replica[E any] struct {
	info  Info
	rep   *partition.Replica // set once, before ready is closed
	ready chan struct{}
	// id is info.TopicID parsed (zero if it does not parse).
	id metadata.TopicID
	// cfg is the topic's resolved configs, replaced when the metadata
	// changes; read by produce and retention.
	cfg atomic.Pointer[topicconfig.Config]
	// resolve resolves the topic's configs again (Deps.TopicConfig).
	resolve func(topic string) topicconfig.Config
	// logger names the partition.
	logger *slog.Logger
	// extra is the node's state of the replica (Deps.Attach).
	extra E
	// recleanAt is when a cleaning is due regardless of dirt (Unix ms; 0
	// none): delete.retention.ms after one that reached new records, whose
	// tombstones' delete horizons then pass (compaction.go).
	recleanAt atomic.Int64

	// wcMu guards wc, and serialises SetWriteCaching calls so that the
	// group ends in the mode of the last config applied (writecaching.go).
	wcMu sync.Mutex
	wc   writeCaching

	// traffic counts the records produced to and fetched from the replica.
	traffic metrics.Traffic
}

// A Replica's leaderships are reported by the controller.
var _ controller.Leadership = (*Replica[struct{}])(nil)

// TopicPartition names the replica's partition.
func (r *Replica[E]) TopicPartition() (string, int32) { return r.info.Topic, r.info.Partition }

// Opened is closed once the replica is open (Partition is set).
func (r *Replica[E]) Opened() <-chan struct{} { return r.ready }

// LeadsIn reports whether the replica leads in term; only once Opened.
func (r *Replica[E]) LeadsIn(term uint64) bool {
	return r.rep.IsLeader() && uint64(r.rep.LeaderEpoch()) == term
}

// Info is what replica.json records of the replica.
func (r *Replica[E]) Info() Info { return r.info }

// TopicID is the id of the replica's topic (zero if its replica.json
// holds none that parses).
func (r *Replica[E]) TopicID() metadata.TopicID { return r.id }

// Partition is the open replica: its Raft group, FSM and log. Set once
// the Replica is returned by the Set (nil only inside Deps.Attach).
func (r *Replica[E]) Partition() *partition.Replica { return r.rep }

// Logger is the node's logger naming the partition.
func (r *Replica[E]) Logger() *slog.Logger { return r.logger }

// Traffic counts the records produced to and fetched from the replica.
func (r *Replica[E]) Traffic() *metrics.Traffic { return &r.traffic }

// Extra is the node's own state of the replica, filled by Deps.Attach.
func (r *Replica[E]) Extra() *E { return &r.extra }

// Config is the topic's resolved configs, cached until the metadata
// changes.
func (r *Replica[E]) Config() topicconfig.Config {
	if c := r.cfg.Load(); c != nil {
		return *c
	}
	return r.refreshConfig()
}

// refreshConfig resolves the topic's configs again (setConfig).
func (r *Replica[E]) refreshConfig() topicconfig.Config {
	c := r.resolve(r.info.Topic)
	r.setConfig(c)
	return c
}

// setConfig stores c as the topic's configs and applies its segment limits
// to the log and its write caching to the Raft group when they changed.
func (r *Replica[E]) setConfig(c topicconfig.Config) {
	old := r.cfg.Swap(&c)
	if old == nil || old.SegmentBytes != c.SegmentBytes || old.SegmentMs != c.SegmentMs {
		r.rep.SetSegmentLimits(c.SegmentBytes, time.Duration(c.SegmentMs)*time.Millisecond)
	}
	r.applyWriteCaching(c)
}

// DirName is the name of a partition's directory under the partitions
// directory.
func DirName(topic string, p int32) string { return fmt.Sprintf("%s-%d", topic, p) }

// groupName is the name of a replica's Raft group.
func groupName(info Info) string { return PartitionGroup(info.TopicID, info.Partition) }

// removeInfo removes dir's replica.json durably, first, so that a removal
// cut short leaves a directory no restart opens again (OpenFromDisk skips
// one without replica.json).
func removeInfo(fsys vfs.FS, dir string) error {
	err := fsys.Remove(filepath.Join(dir, "replica.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}

// PartitionGroup is the name of the Raft group of partition p of the topic
// whose id is topicID (metadata.TopicID's String form).
func PartitionGroup(topicID string, p int32) string {
	return "p/" + topicID + "/" + strconv.Itoa(int(p))
}

// writeInfo replaces dir's replica.json with info, atomically and durably
// (written to a temporary file, synced, renamed, the directory synced;
// dir is created if missing); a file that holds info already is left
// alone, so that a node whose disk is full restarts without writing.
func writeInfo(fsys vfs.FS, dir string, info Info) error {
	b, _ := json.Marshal(info)
	path := filepath.Join(dir, "replica.json")
	if old, err := vfs.ReadFile(fsys, path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := vfs.MkdirAllSync(fsys, dir, vfs.DirMode); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	tmp := path + ".tmp"
	f, err := vfs.Create(fsys, tmp)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("broker: write %s: %w", path, err)
	}
	return nil
}
