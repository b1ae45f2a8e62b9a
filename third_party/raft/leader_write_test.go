package raft

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// gatedStore is an InmemStore whose StoreLogs can be held (gate closed)
// or made to fail, and which records the highest index it stored.
type gatedStore struct {
	*InmemStore

	mu     sync.Mutex
	open   chan struct{} // closed while the gate is open
	fail   error
	stored uint64
	beyond []string // DeleteRanges past the stored end: a store such as raft-wal refuses them
}

func newGatedStore() *gatedStore {
	open := make(chan struct{})
	close(open)
	return &gatedStore{InmemStore: NewInmemStore(), open: open}
}

// hold closes the gate: StoreLogs waits until release.
func (g *gatedStore) hold() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedStore) release() {
	g.mu.Lock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
	g.mu.Unlock()
}

func (g *gatedStore) failWith(err error) {
	g.mu.Lock()
	g.fail = err
	g.mu.Unlock()
}

func (g *gatedStore) StoreLogs(logs []*Log) error {
	g.mu.Lock()
	open, fail := g.open, g.fail
	g.mu.Unlock()
	<-open
	if fail != nil {
		return fail
	}
	if err := g.InmemStore.StoreLogs(logs); err != nil {
		return err
	}
	g.mu.Lock()
	g.stored = max(g.stored, logs[len(logs)-1].Index)
	g.mu.Unlock()
	return nil
}

func (g *gatedStore) StoreLog(l *Log) error { return g.StoreLogs([]*Log{l}) }

func (g *gatedStore) DeleteRange(min, max uint64) error {
	g.mu.Lock()
	if max > g.stored {
		g.beyond = append(g.beyond, fmt.Sprintf("[%d, %d] with %d stored", min, max, g.stored))
	}
	g.mu.Unlock()
	return g.InmemStore.DeleteRange(min, max)
}

func (g *gatedStore) storedIndex() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stored
}

// gatedCluster is three Raft servers with ParallelLeaderWrite over
// in-memory transports, each on a gatedStore.
type gatedCluster struct {
	rafts  []*Raft
	stores []*gatedStore
	trans  []*InmemTransport
	fsms   []*MockFSM
}

func newGatedCluster(t *testing.T, tune ...func(*Config)) *gatedCluster {
	t.Helper()
	c := &gatedCluster{}
	var cfg Configuration
	for i := 0; i < 3; i++ {
		addr, tr := NewInmemTransport("")
		c.trans = append(c.trans, tr)
		cfg.Servers = append(cfg.Servers, Server{Suffrage: Voter, ID: ServerID(fmt.Sprint("s", i)), Address: addr})
	}
	for _, a := range c.trans {
		for _, b := range c.trans {
			a.Connect(b.LocalAddr(), b)
		}
	}
	for i := 0; i < 3; i++ {
		conf := inmemConfig(t)
		conf.LocalID = cfg.Servers[i].ID
		conf.ParallelLeaderWrite = true
		for _, f := range tune {
			f(conf)
		}
		store, fsm, snaps := newGatedStore(), &MockFSM{}, NewInmemSnapshotStore()
		if err := BootstrapCluster(conf, store, store, snaps, c.trans[i], cfg); err != nil {
			t.Fatal(err)
		}
		r, err := NewRaft(conf, fsm, store, store, snaps, c.trans[i])
		if err != nil {
			t.Fatal(err)
		}
		c.rafts, c.stores, c.fsms = append(c.rafts, r), append(c.stores, store), append(c.fsms, fsm)
	}
	t.Cleanup(func() {
		for i, r := range c.rafts {
			c.stores[i].release()
			_ = r.Shutdown().Error()
		}
	})
	return c
}

// leader waits for a leader and returns its position.
func (c *gatedCluster) leader(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, r := range c.rafts {
			if r.State() == Leader {
				return i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no leader within 10s")
	return -1
}

// isolate cuts server i off from the other two, both ways.
func (c *gatedCluster) isolate(i int) {
	for j := range c.trans {
		if j != i {
			c.trans[i].Disconnect(c.trans[j].LocalAddr())
			c.trans[j].Disconnect(c.trans[i].LocalAddr())
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// With one follower cut off, an entry needs the leader's own copy to
// commit: while the leader's store holds the write, the other follower
// already stores the entry (the two writes overlap), but the entry does
// not commit until the leader's StoreLogs returns.
func TestParallelLeaderWriteCountsOnlyStoredEntries(t *testing.T) {
	c := newGatedCluster(t)
	l := c.leader(t)
	if err := c.rafts[l].Apply([]byte("warm"), time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	f, cut := (l+1)%3, (l+2)%3
	c.isolate(cut)

	c.stores[l].hold()
	index := c.rafts[l].LastIndex() + 1
	future := c.rafts[l].Apply([]byte("x"), 0)
	waitFor(t, "the leader to dispatch the entry", func() bool { return c.rafts[l].LastIndex() >= index })
	waitFor(t, "the follower to store the entry", func() bool { return c.stores[f].storedIndex() >= index })
	time.Sleep(200 * time.Millisecond) // heartbeats and commit timeouts pass meanwhile
	if got := c.rafts[l].CommitIndex(); got >= index {
		t.Fatalf("commit index %d reached entry %d while the leader's own store held it (one of three durable)", got, index)
	}
	select {
	case <-future.(*logFuture).errCh:
		t.Fatal("apply answered before the leader stored the entry")
	default:
	}

	c.stores[l].release()
	if err := future.Error(); err != nil {
		t.Fatalf("apply after release: %v", err)
	}
	if got := c.stores[l].storedIndex(); got < index {
		t.Fatalf("committed entry %d, leader stored only %d", index, got)
	}
}

// With both followers up, the followers' copies commit an entry while the
// leader's own write is still held: the leader's fsync is off the path.
func TestParallelLeaderWriteCommitsOnFollowerCopies(t *testing.T) {
	c := newGatedCluster(t)
	l := c.leader(t)
	c.stores[l].hold()
	if err := c.rafts[l].Apply([]byte("x"), 5*time.Second).Error(); err != nil {
		t.Fatalf("apply with the leader's store held: %v", err)
	}
	if got := c.stores[l].storedIndex(); got >= c.rafts[l].LastIndex() {
		t.Fatalf("leader stored %d while held", got)
	}
	c.stores[l].release()
	waitFor(t, "the leader's own copy", func() bool { return c.stores[l].storedIndex() >= c.rafts[l].LastIndex() })
}

// A leader whose store fails steps down, claims no entry it does not
// hold, and the group goes on under another leader with equal logs.
func TestParallelLeaderWriteErrorStepsDown(t *testing.T) {
	c := newGatedCluster(t)
	l := c.leader(t)
	if err := c.rafts[l].Apply([]byte("a"), time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	c.stores[l].failWith(errors.New("disk full"))
	_ = c.rafts[l].Apply([]byte("b"), 5*time.Second).Error() // may commit on the followers' copies
	waitFor(t, "the failed leader to step down", func() bool { return c.rafts[l].State() != Leader })
	stored, _ := c.stores[l].LastIndex()
	if got := c.rafts[l].LastIndex(); got > stored { // its store still fails: it cannot have grown
		t.Fatalf("failed leader claims last index %d, its store holds %d", got, stored)
	}
	c.stores[l].failWith(nil)

	var nl int
	waitFor(t, "a leader", func() bool {
		for i, r := range c.rafts {
			if r.State() == Leader {
				nl = i
				return true
			}
		}
		return false
	})
	if err := c.rafts[nl].Apply([]byte("c"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := c.rafts[nl].Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every FSM to apply the same entries", func() bool {
		want := c.fsms[nl].Logs()
		for _, m := range c.fsms {
			if fmt.Sprint(m.Logs()) != fmt.Sprint(want) {
				return false
			}
		}
		return true
	})
}

// A snapshot taken while the leader's own write is held compacts only
// what the leader's store holds: entries the followers committed and the
// leader applied are not deleted under its writer.
func TestParallelLeaderWriteCompactsOnlyStored(t *testing.T) {
	c := newGatedCluster(t, func(conf *Config) { conf.TrailingLogs = 0 })
	l := c.leader(t)
	c.stores[l].hold()
	for i := 0; i < 5; i++ {
		if err := c.rafts[l].Apply([]byte{byte(i)}, 5*time.Second).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.rafts[l].Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	c.stores[l].mu.Lock()
	beyond := c.stores[l].beyond
	c.stores[l].mu.Unlock()
	if len(beyond) > 0 {
		t.Fatalf("compaction deleted entries the leader's store did not hold yet: %v", beyond)
	}
	c.stores[l].release()
	last := c.rafts[l].LastIndex()
	waitFor(t, "the leader's own copy", func() bool { return c.stores[l].storedIndex() >= last })
	first, _ := c.stores[l].FirstIndex()
	stored, _ := c.stores[l].LastIndex()
	if first > stored || stored != last {
		t.Fatalf("leader's store holds [%d, %d], raft's last index is %d", first, stored, last)
	}
	for i := first; i <= stored; i++ {
		var e Log
		if err := c.stores[l].GetLog(i, &e); err != nil {
			t.Fatalf("entry %d of [%d, %d]: %v", i, first, stored, err)
		}
	}
}

// A leader's heartbeats reach its followers through the transport's fast
// path (processHeartbeat), beside their main loops, which set up and
// settle a writer whenever they lead. A heartbeat neither reads nor writes
// the log, so it must not touch the writer; the race detector checks that
// while leadership moves from one server to the next.
func TestParallelLeaderWriteHeartbeatsBesideLeaderChanges(t *testing.T) {
	if !raceEnabled {
		t.Skip("only the race detector sees a heartbeat touch the writer; run with -race")
	}
	c := newGatedCluster(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, l := range c.rafts {
				if l.State() != Leader {
					continue
				}
				for _, f := range c.rafts {
					if f == l {
						continue
					}
					hb := &AppendEntriesRequest{RPCHeader: l.getRPCHeader(), Term: l.getCurrentTerm(),
						Leader: l.trans.EncodePeer(l.localID, l.localAddr)}
					resp := make(chan RPCResponse, 1)
					f.processHeartbeat(RPC{Command: hb, RespChan: resp})
					<-resp
				}
			}
		}
	})
	for range 150 {
		l := c.leader(t)
		// Leadership may move on its own between leader() and Apply; only
		// the race detector's verdict matters here.
		if err := c.rafts[l].Apply([]byte("x"), time.Second).Error(); err != nil &&
			!errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrLeadershipLost) && !errors.Is(err, ErrLeadershipTransferInProgress) {
			t.Fatal(err)
		}
		_ = c.rafts[l].LeadershipTransfer().Error()
	}
	close(stop)
	wg.Wait()
}
