package diskfull

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/diskguard"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/multiraft"
)

// TestDiskUse measures the disk one node uses per acknowledged byte, for
// each Raft log store and record size: a one-partition topic of
// replication 1 takes MINIKAFKA_DISKUSE_MB MiB (default 128) of
// incompressible records, acks=all; the node's data directory is sampled
// (allocated blocks, so preallocated files count in full) every second
// while it does. MINIKAFKA_DISKUSE_DISK_MB, when set, makes the node size
// itself for a data disk of that many MiB (it sees a disk of that size
// with room to spare), as it does for its real one otherwise. It prints a
// table and asserts nothing but that the records were acknowledged: it
// is a measurement, run with MINIKAFKA_DISKUSE=1 (MINIKAFKA_DISKUSE_STORES=
// pebble,wal picks the log stores).
func TestDiskUse(t *testing.T) {
	if os.Getenv("MINIKAFKA_DISKUSE") == "" {
		t.Skip("a measurement: set MINIKAFKA_DISKUSE=1 to run it")
	}
	volume := int64(128) << 20
	if s := os.Getenv("MINIKAFKA_DISKUSE_MB"); s != "" {
		mb, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		volume = int64(mb) << 20
	}
	var disk int64
	if s := os.Getenv("MINIKAFKA_DISKUSE_DISK_MB"); s != "" {
		mb, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		disk = int64(mb) << 20
	}
	var rows []string
	stores := []multiraft.LogStore{multiraft.LogStorePebble, multiraft.LogStoreWAL, multiraft.LogStoreBoltDB}
	if s := os.Getenv("MINIKAFKA_DISKUSE_STORES"); s != "" {
		stores = nil
		for _, name := range strings.Split(s, ",") {
			stores = append(stores, multiraft.LogStore(name))
		}
	}
	for _, store := range stores {
		for _, size := range []int{1 << 10, 16 << 10} {
			u := measureDiskUse(t, store, size, volume, disk)
			rows = append(rows, fmt.Sprintf("| %s | %d KiB | %.1f | %.2f | %.2f | %s |", store, size>>10,
				float64(u.acked)/(1<<20), u.endRatio(), u.peakRatio(), u.byPart))
		}
	}
	t.Logf("\n| log store | record | acknowledged MiB | disk/acked at end | peak | at end, MiB by part |\n|---|---|---|---|---|---|\n%s",
		strings.Join(rows, "\n"))
}

type diskUse struct {
	acked     int64
	idle      int64 // the data dir before producing
	end, peak int64 // after producing; the most while producing past half the volume
	byPart    string
}

func (u diskUse) endRatio() float64  { return float64(u.end-u.idle) / float64(u.acked) }
func (u diskUse) peakRatio() float64 { return float64(u.peak-u.idle) / float64(u.acked) }

func measureDiskUse(t *testing.T, store multiraft.LogStore, size int, volume, disk int64) diskUse {
	t.Helper()
	var u diskUse
	t.Run(fmt.Sprintf("%s/%d", store, size), func(t *testing.T) {
		c := testcluster.Start(t, 1, func(cfg *broker.Config) {
			d := broker.DefaultConfig()
			cfg.PartitionLogStore = store
			cfg.SegmentBytes = d.SegmentBytes
			cfg.PartitionRaft.CommitTimeout = d.PartitionRaft.CommitTimeout
			cfg.PartitionRaft.MaxAppendEntries = d.PartitionRaft.MaxAppendEntries
			if disk > 0 {
				cfg.DiskStat = func(string) (diskguard.Usage, error) { return diskguard.Usage{Total: disk, Free: disk}, nil }
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		const topic = "diskuse"
		if _, err := kadm.NewClient(c.Client(t)).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		dir := c.DataDir(1)
		u.idle = allocated(t, dir)
		cl := c.Client(t, kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.MaxBufferedRecords(4096))
		var acked atomic.Int64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if acked.Load() >= volume/2 {
						u.peak = max(u.peak, allocated(t, dir))
					}
				}
			}
		}()
		value := make([]byte, size)
		var failed atomic.Value
		for sent := int64(0); sent < volume; sent += int64(size) {
			v := make([]byte, size)
			_, _ = rand.Read(value)
			copy(v, value)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(r *kgo.Record, err error) {
				if err != nil {
					failed.Store(err)
					return
				}
				acked.Add(int64(len(r.Value)))
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		close(stop)
		<-sampled
		if err, _ := failed.Load().(error); err != nil {
			t.Fatal(err)
		}
		u.acked = acked.Load()
		u.end = allocated(t, dir)
		u.peak = max(u.peak, u.end)
		u.byPart = byPart(t, dir)
	})
	return u
}

// allocated sums the allocated blocks of every file under dir.
func allocated(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed while walking
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && !d.IsDir() {
			total += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// byPart is the allocated MiB of the data dir's parts: each partition's
// log/, fsm/ and snapshots, the node-wide raftlog/ (pebble), the rest.
func byPart(t *testing.T, dir string) string {
	t.Helper()
	parts := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if os.IsNotExist(err) {
			return nil // removed while walking
		}
		if err != nil {
			return err
		}
		st, _ := info.Sys().(*syscall.Stat_t)
		rel, _ := filepath.Rel(dir, path)
		part := "other"
		switch {
		case strings.HasPrefix(rel, "raftlog"+string(filepath.Separator)):
			part = "pebble " + pebbleKind(filepath.Base(rel))
		case strings.Contains(rel, string(filepath.Separator)+"log"+string(filepath.Separator)):
			part = "segments"
		case strings.Contains(rel, string(filepath.Separator)+"snapshots"+string(filepath.Separator)):
			part = "snapshots"
		case strings.Contains(rel, string(filepath.Separator)+"wal"+string(filepath.Separator)), strings.HasSuffix(rel, "raft.db"):
			part = "raft log"
		}
		parts[part] += st.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range []string{"segments", "raft log", "pebble wal", "pebble sst", "pebble blob", "pebble other", "snapshots", "other"} {
		if v := parts[k]; v > 0 {
			out = append(out, fmt.Sprintf("%s %.1f", k, float64(v)/(1<<20)))
		}
	}
	return strings.Join(out, ", ")
}

func pebbleKind(name string) string {
	switch filepath.Ext(name) {
	case ".log":
		return "wal"
	case ".sst":
		return "sst"
	case ".blob":
		return "blob"
	}
	return "other"
}
