package broker_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/internal/vfs"
)

// nodeCrashPoint is where a node's storage loses power: the nth
// operation (n drawn from the seed) that match accepts.
type nodeCrashPoint struct {
	name  string
	seed  uint64
	upTo  int // n is in 1..upTo
	match func(k vfs.Op, path string) bool
}

func isRaftWAL(path string) bool {
	return strings.Contains(path, "/raftlog/") && strings.HasSuffix(path, ".log")
}

func isSegment(path string) bool {
	return strings.Contains(path, "/partitions/") && strings.HasSuffix(path, ".log")
}

var nodeCrashPoints = []nodeCrashPoint{
	{"raft WAL sync", 1, 40, func(k vfs.Op, p string) bool { return k == vfs.OpSync && isRaftWAL(p) }},
	{"segment sync", 2, 3, func(k vfs.Op, p string) bool { return k == vfs.OpSync && isSegment(p) }},
	{"segment roll", 3, 2, func(k vfs.Op, p string) bool { return k == vfs.OpCreate && isSegment(p) }},
	{"checkpoint sync", 4, 3, func(k vfs.Op, p string) bool {
		return k == vfs.OpSync && strings.HasPrefix(filepath.Base(p), "checkpoint")
	}},
	{"any operation", 5, 1500, func(vfs.Op, string) bool { return true }},
}

// TestNodeStorageCrashKeepsAcknowledged runs a node whose whole storage
// (the Pebble Raft log, the partition's segments and indexes, the FSM's
// checkpoint and journal) is one MemFS, produces with acks=all through
// franz-go, and takes the image a power loss would leave at a chosen
// operation. Restarted on that image, the node must serve every record
// acknowledged before it at its offset with its value, and no record
// twice. Frequent snapshots make raft compact its log, so the partition
// log's own syncs must hold what the Raft log no longer does.
//
// What is not on the FS stays on the real disk: the metadata group, the
// group's marker and raft's snapshot store. The last two are copied as
// they were at the crash point. replica.json is on the FS: a restart that
// lost it would not open the replica.
func TestNodeStorageCrashKeepsAcknowledged(t *testing.T) {
	t.Parallel()
	for _, cp := range nodeCrashPoints {
		t.Run(strings.ReplaceAll(cp.name, " ", "_"), func(t *testing.T) { testNodeStorageCrash(t, cp) })
	}
}

func testNodeStorageCrash(t *testing.T, cp nodeCrashPoint) {
	rng := rand.New(rand.NewPCG(cp.seed, 7))
	nth := 1 + rng.IntN(cp.upTo)
	mem := vfs.NewStrictMem()
	if cp.seed%2 == 0 {
		mem = vfs.NewStrictMemSeeded(rng.Uint64()) // some unsynced writes survive, the last one torn
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.PartitionFS, cfg.RaftLogFS = mem, vfs.Pebble(mem)
		cfg.PartitionRaft.SnapshotInterval = 20 * time.Millisecond
		cfg.PartitionRaft.SnapshotThreshold = 16
		cfg.PartitionRaft.TrailingLogs = 4
	})
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // 4 KiB values make 32 KiB batches: segments roll
	createTopic(t, cl, "crash", 1, 1)
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "crash", Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	acked := map[int64]string{0: "first"}
	var crashed atomic.Bool
	var image *vfs.MemFS
	osCopy := filepath.Join(t.TempDir(), "partitions")
	partitions := filepath.Join(c.DataDir(1), "partitions")
	var copyErr error
	seen := 0
	mem.CloneAt(func(k vfs.Op, path string) bool {
		if cp.match(k, path) {
			seen++
		}
		return seen == nth
	}, func(m *vfs.MemFS) {
		image, copyErr = m, copyTree(partitions, osCopy)
		crashed.Store(true) // last: whoever sees it sees the image
	})
	produceUntilCrash(t, cl, &crashed, acked)
	c.HaltNode(1)
	if copyErr != nil {
		t.Fatal(copyErr)
	}
	t.Logf("crash at %s #%d (%d operations in), %d records acknowledged before it", cp.name, nth, mem.Ops(), len(acked))
	if err := os.RemoveAll(partitions); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(osCopy, partitions); err != nil {
		t.Fatal(err)
	}
	c.Configure(1, func(cfg *broker.Config) { cfg.PartitionFS, cfg.RaftLogFS = image, vfs.Pebble(image) })
	c.StartNode(1)
	c.WaitReady()
	checkAcknowledged(t, c.Seeds(), acked)
}

// produceUntilCrash produces batches of 8 records of 4 KiB, one at a time,
// noting each record acknowledged before the crash image was taken, until
// it is.
func produceUntilCrash(t *testing.T, cl *kgo.Client, crashed *atomic.Bool, acked map[int64]string) {
	t.Helper()
	pad := strings.Repeat("x", 4<<10)
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; !crashed.Load(); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the crash point was not reached in 30s (%d batches)", i)
		}
		recs := make([]*kgo.Record, 8)
		for j := range recs {
			recs[j] = &kgo.Record{Topic: "crash", Value: fmt.Appendf(nil, "v%05d-%d-%s", i, j, pad)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		results := cl.ProduceSync(ctx, recs...)
		cancel()
		// Read after the acknowledgement arrived: a record acknowledged
		// before the image was taken was durable in it.
		before := !crashed.Load()
		for _, r := range results {
			if r.Err == nil && before {
				acked[r.Record.Offset] = string(r.Record.Value)
			}
		}
	}
}

// checkAcknowledged reads the partition from the start to its end and
// checks every acknowledged record and that no value is there twice.
func checkAcknowledged(t *testing.T, seeds []string, acked map[int64]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"crash": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var end int64
	for {
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "crash")
		if o, ok := ends.Lookup("crash", 0); err == nil && ok && o.Err == nil {
			end = o.Offset
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("end offset after the restart: %v", errors.Join(err, ctx.Err()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := map[int64]string{}
	offsetOf := map[string]int64{}
	for next := int64(0); next < end; {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d offsets after the restart", next, end)
		}
		for _, r := range fetches.Records() {
			v := string(r.Value)
			if o, dup := offsetOf[v]; dup {
				t.Errorf("%.8s at offsets %d and %d", v, o, r.Offset)
			}
			got[r.Offset], offsetOf[v] = v, r.Offset
			next = r.Offset + 1
		}
	}
	lost := 0
	for _, o := range slices.Sorted(maps.Keys(acked)) {
		if v := acked[o]; got[o] != v {
			if lost++; lost <= 5 {
				t.Errorf("acknowledged offset %d: %.8q after the restart, want %.8q", o, got[o], v)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged records lost or changed (log end %d)", lost, len(acked), end)
	}
}

// copyTree copies the regular files under src to dst. A file that goes
// while it is copied (raft reaping an old snapshot) is skipped.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, vfs.DirMode)
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, vfs.FileMode)
	})
}
