package multiraft

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// testNet is a set of Hosts on 127.0.0.1 that resolve each other through
// one address book.
type testNet struct {
	t    testing.TB
	base string
	tune func(*Tuning)
	// store is the LogStore of the groups that open and reopen open.
	store LogStore
	// tls, when set, gives each node its Config.TLS.
	tls func(id int32) *TLS
	// logs, when set, takes every node's log lines from Debug up.
	logs io.Writer
	// logMemTable is every node's Config.LogMemTable (0: the default).
	logMemTable int64

	mu    sync.Mutex // guards addrs and hosts
	addrs map[int32]string
	hosts map[int32]*Host
}

func newTestNet(t testing.TB, tune func(*Tuning)) *testNet {
	n := &testNet{t: t, base: t.TempDir(), tune: tune, addrs: map[int32]string{}, hosts: map[int32]*Host{}}
	t.Cleanup(func() {
		n.mu.Lock()
		hosts := n.hosts
		n.hosts = map[int32]*Host{}
		n.mu.Unlock()
		for _, h := range hosts {
			if err := h.Close(); err != nil {
				t.Errorf("Host.Close: %v", err)
			}
		}
	})
	return n
}

func (n *testNet) resolve(id int32) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.addrs[id]
	return a, ok
}

// start listens as node id, on its previous address if it had one.
func (n *testNet) start(id int32) *Host {
	n.t.Helper()
	bind := "127.0.0.1:0"
	if a, ok := n.resolve(id); ok {
		bind = a
	}
	tun := DefaultTuning()
	if n.tune != nil {
		n.tune(&tun)
	}
	var logger = logging.Discard()
	if os.Getenv("MINIKAFKA_TEST_LOG") != "" {
		logger = logging.New(os.Stderr, -4).With("node", id)
	}
	if n.logs != nil {
		logger = logging.New(n.logs, slog.LevelDebug).With("node", id)
	}
	var sec *TLS
	if n.tls != nil {
		sec = n.tls(id)
	}
	var h *Host
	var err error
	for range 50 { // a restarted node's port may linger for a moment
		h, err = Listen(Config{NodeID: id, BindAddr: bind, Resolve: n.resolve, Logger: logger, Tuning: tun,
			LogDir: filepath.Join(n.base, fmt.Sprint(id), "raftlog"), LogMemTable: n.logMemTable, TLS: sec})
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		n.t.Fatalf("Listen node %d: %v", id, err)
	}
	n.mu.Lock()
	n.addrs[id] = h.Addr()
	n.hosts[id] = h
	n.mu.Unlock()
	return h
}

// stop closes node id's Host (its groups go quiet, as after a crash).
func (n *testNet) stop(id int32) {
	n.mu.Lock()
	h := n.hosts[id]
	delete(n.hosts, id)
	n.mu.Unlock()
	if h != nil {
		_ = h.Close()
	}
}

func (n *testNet) host(id int32) *Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[id]
}

// startWatched starts nodes 1 to 3, each watching the others.
func (n *testNet) startWatched() {
	for id := int32(1); id <= 3; id++ {
		n.start(id)
	}
	n.watchAll()
}

// watchAll makes every host watch every other.
func (n *testNet) watchAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range n.hosts {
		for id, a := range n.addrs {
			h.WatchPeer(id, a)
		}
	}
}

func fastTiming() Timing {
	t := DefaultTiming()
	t.HeartbeatTimeout = 200 * time.Millisecond
	t.ElectionTimeout = 200 * time.Millisecond
	t.LeaderLeaseTimeout = 100 * time.Millisecond
	t.CommitTimeout = 10 * time.Millisecond
	return t
}

// open opens group name on node id with a countFSM.
func (n *testNet) open(id int32, name string, members []int32, timing Timing, hold bool) (*Group, *countFSM) {
	n.t.Helper()
	f := &countFSM{}
	g, err := n.host(id).Open(GroupSpec{Name: name, Members: members, Dir: filepath.Join(n.base, fmt.Sprint(id), name),
		Timing: timing, FSM: f, Hold: hold, LogStore: n.store})
	if err != nil {
		n.t.Fatalf("Open %s on %d: %v", name, id, err)
	}
	n.t.Cleanup(func() { _ = g.Close() })
	return g, f
}

// leaderOf waits until one of gs leads and returns its index.
func leaderOf(t testing.TB, gs []*Group) int {
	t.Helper()
	var at int
	waitFor(t, "a leader", func() bool {
		for i, g := range gs {
			if g != nil && g.IsLeader() {
				at = i
				return true
			}
		}
		return false
	})
	return at
}

// waitFor polls cond until it holds or 15s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// propose applies v through whichever of gs leads, retrying a lost
// leadership (countFSM ignores duplicates).
func propose(t testing.TB, gs []*Group, v uint64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		g := gs[leaderOf(t, gs)]
		if _, _, err := g.Propose(binary.BigEndian.AppendUint64(nil, v), time.Second).Wait(); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("value %d not applied within 15s", v)
}

// countFSM applies the values 1, 2, 3, ... in order: it counts them and
// sums them. A value at or below the highest one applied is a client retry
// after an ambiguous Apply error, and is ignored, so retries are safe.
type countFSM struct {
	mu   sync.Mutex // guards st and gaps
	st   countState
	gaps int // values that skipped ahead; must stay 0
}

type countState struct{ n, sum, high uint64 }

func (f *countFSM) Apply(l *raft.Log) any {
	v := binary.BigEndian.Uint64(l.Data)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case v <= f.st.high:
	case v == f.st.high+1:
		f.st = countState{n: f.st.n + 1, sum: f.st.sum + v, high: v}
	default:
		f.gaps++
	}
	return v
}

func (f *countFSM) state() (countState, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, f.gaps
}

func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) {
	st, _ := f.state()
	return countSnapshot(st), nil
}

func (f *countFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var b [24]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = countState{n: binary.BigEndian.Uint64(b[0:]), sum: binary.BigEndian.Uint64(b[8:]), high: binary.BigEndian.Uint64(b[16:])}
	return nil
}

type countSnapshot countState

func (s countSnapshot) Persist(sink raft.SnapshotSink) error {
	b := binary.BigEndian.AppendUint64(nil, s.n)
	b = binary.BigEndian.AppendUint64(b, s.sum)
	b = binary.BigEndian.AppendUint64(b, s.high)
	// Pad so that a snapshot takes more than one write on the wire.
	b = append(b, make([]byte, 300<<10)...)
	if _, err := sink.Write(b); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (countSnapshot) Release() {}

var _ = slices.Contains[[]int32]

// allStores is every LogStore, for tests that run with each.
var allStores = []LogStore{LogStoreBoltDB, LogStoreWAL, LogStorePebble}

// ledByNode1 opens group names[i] with members[i] on nodes 1 to 3 (held
// as new groups), releases node 1's campaigns (node 1 comes first in every
// members list) and waits until node 1 leads each group and its followers
// know it. It returns each group's members, node 1's first.
func ledByNode1(t *testing.T, n *testNet, names []string, members [][]int32, timing Timing) [][]*Group {
	t.Helper()
	all := make([][]*Group, len(names))
	var first []*Group
	for i, name := range names {
		for id := int32(1); id <= 3; id++ {
			g, _ := n.open(id, name, members[i], timing, true)
			all[i] = append(all[i], g)
		}
		first = append(first, all[i][0])
	}
	n.host(1).ReleaseCampaigns(testCtx(t), first)
	for i := range all {
		if at := leaderOf(t, all[i]); at != 0 {
			t.Fatalf("group %s led by node %d, want node 1", names[i], at+1)
		}
		waitFor(t, "followers to know node 1 leads", func() bool {
			for _, g := range all[i][1:] {
				if l, _, ok := g.Leader(); !ok || l != 1 {
					return false
				}
			}
			return true
		})
		// A successor wins only with a log as long as the other
		// survivors' (else one of them campaigns instead, by design);
		// under load node 1's first entry may not have reached them yet.
		waitFor(t, "followers to hold node 1's log", func() bool {
			for _, g := range all[i][1:] {
				if g.LastIndex() != all[i][0].LastIndex() {
					return false
				}
			}
			return true
		})
	}
	return all
}
