package broker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/diskguard"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// fakeDisks are the data disks of a test's nodes, by data directory: 1 GiB
// each, with the free space the test sets (plenty until then).
type fakeDisks struct {
	mu   sync.Mutex
	free map[string]int64
}

func (d *fakeDisks) stat(dir string) (diskguard.Usage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	free, ok := d.free[dir]
	if !ok {
		free = 900 << 20
	}
	return diskguard.Usage{Total: 1 << 30, Free: free}, nil
}

func (d *fakeDisks) set(dir string, free int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.free == nil {
		d.free = map[string]int64{}
	}
	d.free[dir] = free
}

// withFakeDisks puts every node on disks, looked at every 20 ms, with the
// default reserve.
func withFakeDisks(disks *fakeDisks) testcluster.Option {
	return func(cfg *broker.Config) {
		cfg.DiskStat = disks.stat
		cfg.Storage = broker.DefaultStorage() // a reserve of 5% of the disk
		cfg.Tuning.DiskCheckInterval = 20 * time.Millisecond
	}
}

// TestNodeRefusesProduceBelowReserve: below its reserve (5% of the disk)
// a node refuses produce and CreateTopics with KAFKA_STORAGE_ERROR,
// answers /readyz 503 and alerts on /metrics, while fetch and
// DeleteRecords go on; once space is back, produce resumes without a
// restart, and every acknowledged record is in the log once, in order.
func TestNodeRefusesProduceBelowReserve(t *testing.T) {
	t.Parallel()
	disks := &fakeDisks{}
	c := testcluster.Start(t, 1, withFakeDisks(disks))
	cl := c.Client(t)
	createTopic(t, cl, "reserve", 1, 1)
	for i := range int32(3) {
		if err := produceTo(t, cl, 1, "reserve", 1, i, fmt.Sprint("a", i), 10*time.Second); err != nil {
			t.Fatalf("produce a%d: %v", i, err)
		}
	}
	srv := httptest.NewServer(c.Node(1).AdminHandler())
	defer srv.Close()

	disks.set(c.DataDir(1), 20<<20) // 2% of 1 GiB free
	eventually(t, 10*time.Second, "/readyz 503 naming the reserve", func() bool {
		code, body := httpGet(t, srv.URL+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "reserve")
	})
	if err := produceTo(t, cl, 1, "reserve", 1, 3, "a3", 5*time.Second); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce below the reserve: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if got := valuesOf(t, fetchFrom(t, cl, 1, "reserve")); strings.Join(got, ",") != "a0,a1,a2" {
		t.Fatalf("fetch below the reserve: %q, want a0..a2", got)
	}
	if _, body := httpGet(t, srv.URL+"/metrics"); !strings.Contains(body, "minikafka_storage_disk_free_space_alert 2\n") {
		t.Fatal("/metrics below the reserve lacks minikafka_storage_disk_free_space_alert 2")
	}
	if err := createTopicErr(t, cl, "more"); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("CreateTopics below the reserve: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if start := deleteRecords(t, cl, "reserve", 2); start != 2 {
		t.Fatalf("DeleteRecords below the reserve: log start %d, want 2", start)
	}

	disks.set(c.DataDir(1), 500<<20)
	eventually(t, 10*time.Second, "produce resumes once space is back", func() bool {
		return produceTo(t, cl, 1, "reserve", 1, 3, "a3", 5*time.Second) == nil
	})
	resp, err := fetchFromBroker(context.Background(), cl.Broker(1), "reserve", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if got := valuesOf(t, p.RecordBatches); strings.Join(got, ",") != "a2,a3" || p.LogStartOffset != 2 {
		t.Fatalf("the log after DeleteRecords(2) and a3: %q from %d, want a2,a3 from 2", got, p.LogStartOffset)
	}
	eventually(t, 5*time.Second, "/readyz 200 again", func() bool {
		code, _ := httpGet(t, srv.URL+"/readyz")
		return code == http.StatusOK
	})
}

// TestLeaderRefusesProduceForAFullFollower: the replicas of a partition
// fill together, so a leader with room refuses produce while a follower
// gossips that its disk is below its reserve, and takes it again once
// the follower has room.
func TestLeaderRefusesProduceForAFullFollower(t *testing.T) {
	t.Parallel()
	disks := &fakeDisks{}
	c := testcluster.Start(t, 3, withFakeDisks(disks))
	cl := c.Client(t)
	createTopic(t, cl, "peers", 1, 3)
	leader, _ := c.Leader("peers", 0, 10*time.Second)
	if err := produceTo(t, cl, leader, "peers", 1, 0, "a0", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	follower := 1 + leader%3
	disks.set(c.DataDir(int(follower)), 10<<20)
	eventually(t, 10*time.Second, "the leader refuses produce for its full follower", func() bool {
		err := produceTo(t, cl, leader, "peers", 1, 1, "a1", 5*time.Second)
		return errors.Is(err, kerr.KafkaStorageError)
	})
	disks.set(c.DataDir(int(follower)), 500<<20)
	eventually(t, 10*time.Second, "produce resumes once the follower has room", func() bool {
		return produceTo(t, cl, leader, "peers", 1, 1, "a1", 5*time.Second) == nil
	})
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// createTopicErr asks for a topic of one partition and returns its error.
func createTopicErr(t *testing.T, cl kmsg.Requestor, name string) error {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 5000
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
}

// deleteRecords deletes partition 0 of topic below offset and returns the
// new log start offset.
func deleteRecords(t *testing.T, cl kmsg.Requestor, topic string, offset int64) int64 {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	return p.LowWatermark
}

// walFull fails writes to the Raft log store's WAL files with ENOSPC
// while on, as a full disk does.
type walFull struct{ on atomic.Bool }

func (w *walFull) MaybeError(op errorfs.Op) error {
	if w.on.Load() && filepath.Ext(op.Path) == ".log" && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt) {
		return syscall.ENOSPC
	}
	return nil
}

func (w *walFull) String() string { return "walFull" }

// TestNodeRaftLogDiskFull: the Raft log store's disk fills under a node
// that produces (the reserve is off, so nothing stops it first): the node
// does not exit (Pebble panicked on the failed WAL write), produce gets
// retriable errors and the store reports itself on /readyz; once the disk
// has room, produce works again without a restart and every acknowledged
// record is in the log once, in order.
func TestNodeRaftLogDiskFull(t *testing.T) {
	t.Parallel()
	full := &walFull{}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.RaftLogFS = errorfs.Wrap(vfs.Default, full)
		cfg.Storage.MinFreePercent = 0
	})
	t.Cleanup(func() { full.on.Store(false) })
	cl := c.Client(t)
	createTopic(t, cl, "walfull", 1, 1)
	var acked, maybe []string
	produce := func(seq int32, timeout time.Duration) error {
		v := fmt.Sprint("a", seq)
		err := produceTo(t, cl, 1, "walfull", 1, seq, v, timeout)
		switch {
		case err == nil || errors.Is(err, kerr.DuplicateSequenceNumber):
			if !slices.Contains(acked, v) {
				acked = append(acked, v)
			}
		default:
			maybe = append(maybe, v)
		}
		return err
	}
	for i := range int32(5) {
		if err := produce(i, 10*time.Second); err != nil {
			t.Fatalf("produce a%d: %v", i, err)
		}
	}
	srv := httptest.NewServer(c.Node(1).AdminHandler())
	defer srv.Close()
	full.on.Store(true)
	seq := int32(5)
	eventually(t, 20*time.Second, "produce refused with a retriable error and /readyz 503", func() bool {
		err := produce(seq, 2*time.Second)
		if err == nil {
			seq++
			return false
		}
		var ke *kerr.Error
		if errors.As(err, &ke) && !ke.Retriable {
			t.Fatalf("produce on a full disk: %v, not retriable", err)
		}
		code, _ := httpGet(t, srv.URL+"/readyz")
		return code == http.StatusServiceUnavailable
	})
	full.on.Store(false)
	eventually(t, 30*time.Second, "produce works once the disk has room", func() bool {
		return produce(seq, 5*time.Second) == nil
	})
	var log []string
	eventually(t, 20*time.Second, "the log readable again", func() bool {
		b, err := tryFetchFrom(t, cl, 1, "walfull")
		if err != nil {
			return false
		}
		log = valuesOf(t, b)
		return true
	})
	checkHistory(t, log, acked, maybe)
}
