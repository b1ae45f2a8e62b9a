package partition

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/multiraft"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

// group is a 3-replica partition, each replica on its own multiraft.Host
// over loopback TCP, with real Raft log stores (raft-boltdb unless store
// says otherwise), snapshots and logs in temporary directories.
type group struct {
	t       *testing.T
	base    string
	members []int32
	timing  multiraft.Timing

	mu    sync.Mutex // guards addrs (read by the hosts' Resolve)
	addrs map[int32]string
	hosts map[int32]*multiraft.Host
	reps  map[int32]*Replica
	sinks map[int32]*valueSink // nil: replicas open without a RecordSink
	fs    vfs.FS               // the replicas' log and FSM files; nil: the OS
	store multiraft.LogStore   // the replicas' Raft log store; "": boltdb
	admit func(n int) error    // the replicas' ReplicaConfig.Admit
}

func fastTiming() multiraft.Timing {
	t := multiraft.DefaultTiming()
	t.HeartbeatTimeout = 150 * time.Millisecond
	t.ElectionTimeout = 150 * time.Millisecond
	t.LeaderLeaseTimeout = 100 * time.Millisecond
	t.CommitTimeout = 5 * time.Millisecond
	// Snapshot often and keep few entries, so a replica that was down
	// must catch up from a snapshot.
	t.SnapshotInterval = 50 * time.Millisecond
	t.SnapshotThreshold = 8
	t.TrailingLogs = 4
	return t
}

func newGroup(t *testing.T, n int) *group { return newGroupStore(t, n, nil, "") }

// newGroupFS is newGroup with the replicas' logs and FSMs on fsys.
func newGroupFS(t *testing.T, n int, fsys vfs.FS) *group { return newGroupStore(t, n, fsys, "") }

// newGroupStore is newGroupFS with the replicas' Raft logs in store.
func newGroupStore(t *testing.T, n int, fsys vfs.FS, store multiraft.LogStore) *group {
	g := &group{t: t, base: t.TempDir(), timing: fastTiming(), addrs: map[int32]string{},
		hosts: map[int32]*multiraft.Host{}, reps: map[int32]*Replica{}, fs: fsys, store: store}
	for i := 1; i <= n; i++ {
		g.members = append(g.members, int32(i))
	}
	for _, id := range g.members {
		g.start(id)
	}
	t.Cleanup(func() {
		for id := range g.reps {
			g.kill(id)
		}
	})
	return g
}

func (g *group) resolve(id int32) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.addrs[id]
	return a, ok
}

func (g *group) start(id int32) {
	g.t.Helper()
	bind, ok := g.resolve(id)
	if !ok {
		bind = "127.0.0.1:0"
	}
	h, err := multiraft.Listen(multiraft.Config{NodeID: id, BindAddr: bind, Resolve: g.resolve})
	if err != nil {
		g.t.Fatalf("Listen %d: %v", id, err)
	}
	g.mu.Lock()
	g.addrs[id] = h.Addr()
	g.mu.Unlock()
	r, err := OpenReplica(h, ReplicaConfig{
		Group: multiraft.GroupSpec{Name: "p", Members: g.members, Dir: filepath.Join(g.base, fmt.Sprint(id)), Timing: g.timing,
			LogStore: g.store},
		Log:   seglog.Options{SegmentBytes: 2048, FS: g.fs},
		Admit: g.admit,
		Records: func() RecordSink {
			if g.sinks == nil {
				return nil
			}
			g.sinks[id] = &valueSink{}
			return g.sinks[id]
		}(),
	})
	if err != nil {
		h.Close()
		g.t.Fatalf("OpenReplica %d: %v", id, err)
	}
	g.hosts[id], g.reps[id] = h, r
}

// kill stops a replica and its host.
func (g *group) kill(id int32) {
	g.t.Helper()
	if err := g.reps[id].Close(); err != nil {
		g.t.Errorf("Close %d: %v", id, err)
	}
	if err := g.hosts[id].Close(); err != nil {
		g.t.Errorf("Host.Close %d: %v", id, err)
	}
	delete(g.reps, id)
	delete(g.hosts, id)
}

func (g *group) leader() (int32, *Replica) {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for id, r := range g.reps {
			if r.IsLeader() {
				return id, r
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.t.Fatal("no leader within 10s")
	return 0, nil
}

// produce retries through whichever replica leads until the batch is
// applied, as a client would.
func (g *group) produce(b []byte) int64 {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, r := g.leader()
		res, err := r.Produce(context.Background(), b)
		if errors.Is(err, kerr.NotLeaderForPartition) {
			continue
		}
		if err != nil {
			g.t.Fatalf("produce: %v", err)
		}
		if res.Err != nil {
			g.t.Fatalf("produce rejected: %v", res.Err)
		}
		return res.BaseOffset
	}
	g.t.Fatal("produce did not succeed within 10s")
	return 0
}

// converge waits until every live replica has applied up to end.
func (g *group) converge(end int64) {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		for _, r := range g.reps {
			ok = ok && r.HighWatermark() == end
		}
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	for id, r := range g.reps {
		g.t.Logf("replica %d high watermark %d", id, r.HighWatermark())
	}
	g.t.Fatalf("replicas did not converge on %d", end)
}

func (g *group) logBytes(id int32) []byte {
	g.t.Helper()
	var buf bytes.Buffer
	r := g.reps[id]
	if _, err := r.log.CopyTo(&buf, r.log.EndOffset()); err != nil {
		g.t.Fatal(err)
	}
	return buf.Bytes()
}

func (g *group) identical() {
	g.t.Helper()
	var ref []byte
	var refID int32
	for id := range g.reps {
		b := g.logBytes(id)
		if ref == nil {
			ref, refID = b, id
			continue
		}
		if !bytes.Equal(ref, b) {
			g.t.Fatalf("logs of replicas %d and %d differ (%d vs %d bytes)", refID, id, len(ref), len(b))
		}
	}
}

func idemBatch(t testing.TB, pid int64, seq int32, values ...string) []byte {
	t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Timestamp: 1000 + int64(i), Key: []byte("k"), Value: []byte(v)}
	}
	opts := record.BatchOptions{ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq}
	if pid < 0 {
		opts = record.PlainBatch(record.CompressionNone)
	}
	b, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logStores are the Raft log stores that replica tests run with.
var logStores = []multiraft.LogStore{multiraft.LogStoreBoltDB, multiraft.LogStoreWAL}

func TestReplicaGroupFailover(t *testing.T) {
	for _, store := range logStores {
		t.Run(string(store), func(t *testing.T) { testReplicaGroupFailover(t, store) })
	}
}

func testReplicaGroupFailover(t *testing.T, store multiraft.LogStore) {
	g := newGroupStore(t, 3, nil, store)
	var seq int32
	next := func(n int) []byte {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("v%d", int(seq)+i)
		}
		b := idemBatch(t, 42, seq, vals...)
		seq += int32(n)
		return b
	}
	var offsets []int64
	for range 5 {
		offsets = append(offsets, g.produce(next(3)))
	}
	retried := idemBatch(t, 42, 12, "v12", "v13", "v14") // the 5th batch again
	if offsets[4] != 12 {
		t.Fatalf("5th batch at %d, want 12", offsets[4])
	}
	oldID, old := g.leader()
	epochBefore := old.LeaderEpoch()
	g.kill(oldID)

	newID, nl := g.leader()
	if newID == oldID || nl.LeaderEpoch() <= epochBefore {
		t.Fatalf("new leader %d epoch %d after %d epoch %d", newID, nl.LeaderEpoch(), oldID, epochBefore)
	}
	// An exact retry across the leader change gets its original offset.
	if got := g.produce(retried); got != 12 {
		t.Fatalf("retry across leader change got offset %d, want 12", got)
	}
	// Enough new entries that the old leader must catch up from a snapshot.
	var last []byte
	var lastOff int64
	for range 30 {
		last = next(2)
		lastOff = g.produce(last)
	}
	end := int64(seq)
	g.converge(end)
	g.identical()
	if want := map[multiraft.LogStore]string{multiraft.LogStoreBoltDB: "raft.db", multiraft.LogStoreWAL: "wal"}[store]; !fileExists(filepath.Join(g.base, fmt.Sprint(newID), want)) {
		t.Fatalf("no %s in a replica's dir with LogStore %q", want, store)
	}
	// The leader snapshots on its own every 50-100 ms once 8 entries are
	// new; on a loaded machine that may not have happened yet, so take
	// one now (compacting the log to 4 trailing entries).
	if err := nl.Group().Snapshot(); err != nil {
		t.Fatalf("snapshot on the new leader: %v", err)
	}
	applied := nl.fsm.AppliedIndex()

	g.start(oldID)
	g.converge(end)
	g.identical()
	// The rejoined replica could only have caught up from a snapshot:
	// raft stored the one it received.
	if snaps, _ := filepath.Glob(filepath.Join(g.base, fmt.Sprint(oldID), "snapshots", "*.snap")); len(snaps) == 0 {
		t.Fatalf("rejoined replica did not catch up from a snapshot (none stored; leader applied %d)", applied)
	}
	// The newest batch is still in the producer window on every replica,
	// including the one restored from a snapshot.
	g.kill(newID)
	if got := g.produce(last); got != lastOff {
		t.Fatalf("retry after the old leader rejoined got %d, want %d", got, lastOff)
	}
	if n := g.reps[oldID].fsm.AppliedIndex(); n == 0 {
		t.Fatalf("rejoined replica applied nothing")
	}
}

func TestReplicaRestartKeepsProducerState(t *testing.T) {
	for _, store := range logStores {
		t.Run(string(store), func(t *testing.T) { testReplicaRestartKeepsProducerState(t, store) })
	}
}

func testReplicaRestartKeepsProducerState(t *testing.T, store multiraft.LogStore) {
	g := newGroupStore(t, 3, nil, store)
	lab := idemBatch(t, 77, 0, "once")
	g.produce(idemBatch(t, -1, -1, "0", "1", "2")) // -1: not idempotent
	if got := g.produce(lab); got != 3 {
		t.Fatalf("hand-built batch at %d, want 3", got)
	}
	// Restart every replica.
	for _, id := range g.members {
		g.kill(id)
	}
	for _, id := range g.members {
		g.start(id)
	}
	if got := g.produce(lab); got != 3 {
		t.Fatalf("retry after full restart got %d, want 3", got)
	}
	g.converge(4)
	g.identical()
}

func TestProposeOnFollowerIsNotLeader(t *testing.T) {
	g := newGroup(t, 3)
	lid, _ := g.leader()
	for id, r := range g.reps {
		if id == lid {
			continue
		}
		_, err := r.Produce(context.Background(), idemBatch(t, 1, 0, "x"))
		if !errors.Is(err, ErrNotLeader) || !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("follower produce: %v", err)
		}
		return
	}
}

// valueSink is a RecordSink that keeps the values it was given, in order.
type valueSink struct {
	mu     sync.Mutex // guards values and resets
	values []string
	resets int
}

func (s *valueSink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values, s.resets = nil, s.resets+1
}

func (s *valueSink) Record(_, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values = append(s.values, string(value))
}

func (s *valueSink) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.values)
}

// A RecordSink sees every record of the log in order on every replica: as
// batches apply, after a restart (rebuilt from the log) and after catching
// up from a snapshot.
func TestRecordSinkFollowsTheLog(t *testing.T) {
	g := &group{t: t, base: t.TempDir(), timing: fastTiming(), addrs: map[int32]string{},
		hosts: map[int32]*multiraft.Host{}, reps: map[int32]*Replica{}, sinks: map[int32]*valueSink{},
		members: []int32{1, 2, 3}}
	for _, id := range g.members {
		g.start(id)
	}
	t.Cleanup(func() {
		for id := range g.reps {
			g.kill(id)
		}
	})
	var want []string
	seq := int32(0)
	produce := func(n int) {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("v%d", int(seq)+i)
		}
		g.produce(idemBatch(t, 5, seq, vals...))
		seq += int32(n)
		want = append(want, vals...)
	}
	agree := func(what string) {
		t.Helper()
		g.converge(int64(seq))
		for id := range g.reps {
			deadline := time.Now().Add(10 * time.Second)
			for !slices.Equal(g.sinks[id].get(), want) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: replica %d's sink holds %d values, want %d", what, id, len(g.sinks[id].get()), len(want))
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	for range 3 {
		produce(2)
	}
	agree("after applies")
	lag, _ := g.leader()
	lag = lag%3 + 1 // a follower
	g.kill(lag)
	for range 20 {
		produce(3)
	}
	_, l := g.leader()
	if err := l.Group().Snapshot(); err != nil {
		t.Fatal(err)
	}
	g.start(lag) // catches up from a snapshot: rebuilt after Restore
	agree("after a snapshot install")
	for _, id := range g.members {
		g.kill(id)
	}
	for _, id := range g.members {
		g.start(id)
	}
	agree("after a full restart")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
