// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// vouchTransport is an InmemTransport that vouches for the peers the test
// says are alive, and counts the AppendEntries it sends.
type vouchTransport struct {
	*InmemTransport
	sent atomic.Int64
	// lease is what LeaseVouch answers for every follower.
	lease atomic.Bool

	mu   sync.Mutex
	dead map[ServerAddress]bool
	// held are the AppendEntries to a peer that reads them late (holding),
	// each failed for the sender at once.
	holding map[ServerAddress]bool
	held    map[ServerAddress][]*AppendEntriesRequest
	epoch   uint64
	changed chan struct{}
}

func newVouchTransport(addr ServerAddress) *vouchTransport {
	_, t := NewInmemTransport(addr)
	return &vouchTransport{InmemTransport: t, dead: map[ServerAddress]bool{},
		holding: map[ServerAddress]bool{}, held: map[ServerAddress][]*AppendEntriesRequest{},
		epoch: 1, changed: make(chan struct{})}
}

var errAnswerLate = errors.New("answer late")

func (v *vouchTransport) AppendEntries(id ServerID, target ServerAddress, args *AppendEntriesRequest, resp *AppendEntriesResponse) error {
	v.sent.Add(1)
	v.mu.Lock()
	if v.holding[target] {
		late := *args // the heartbeat loop reuses its request
		v.held[target] = append(v.held[target], &late)
		v.mu.Unlock()
		return errAnswerLate
	}
	v.mu.Unlock()
	return v.InmemTransport.AppendEntries(id, target, args, resp)
}

// InstallSnapshot to a peer whose calls are held fails at once, and the
// peer never reads it: a stream cut off by the sender's timeout.
func (v *vouchTransport) InstallSnapshot(id ServerID, target ServerAddress, args *InstallSnapshotRequest, resp *InstallSnapshotResponse, data io.Reader) error {
	v.mu.Lock()
	holding := v.holding[target]
	v.mu.Unlock()
	if holding {
		return errAnswerLate
	}
	return v.InmemTransport.InstallSnapshot(id, target, args, resp, data)
}

// hold makes the AppendEntries to addr fail at once and reach it only on
// release, as calls to a paused node time out and it reads them on
// SIGCONT.
func (v *vouchTransport) hold(addr ServerAddress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.holding[addr] = true
}

// release delivers the calls held for addr in order, runs then, and lets
// calls through again.
func (v *vouchTransport) release(id ServerID, addr ServerAddress, then func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, args := range v.held[addr] {
		_ = v.InmemTransport.AppendEntries(id, addr, args, new(AppendEntriesResponse))
	}
	then()
	delete(v.held, addr)
	delete(v.holding, addr)
}

// AppendEntriesPipeline is not supported, as by a transport without
// pipelining (MiniKafka's, for groups with no MaxInflightAppends): raft
// replicates from its RPC loop.
func (v *vouchTransport) AppendEntriesPipeline(ServerID, ServerAddress) (AppendPipeline, error) {
	return nil, ErrPipelineReplicationNotSupported
}

func (v *vouchTransport) Vouch(_ ServerID, addr ServerAddress) (bool, uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return !v.dead[addr], v.epoch
}

func (v *vouchTransport) LivenessChanged() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changed
}

func (v *vouchTransport) HeartbeatTick(ServerAddress, time.Duration) <-chan struct{} { return nil }

// kill stops vouching for addr and cuts the route to it, as a transport
// does when a node dies.
func (v *vouchTransport) kill(addr ServerAddress) {
	v.unvouch(addr)
	v.Disconnect(addr)
}

// unvouch stops vouching for addr but keeps the route to it: the
// transport missed the peer's answers for a while (it was paused) and
// still reaches it.
func (v *vouchTransport) unvouch(addr ServerAddress) {
	v.mu.Lock()
	v.dead[addr] = true
	v.epoch++
	close(v.changed)
	v.changed = make(chan struct{})
	v.mu.Unlock()
}

// revive vouches for addr again in a new epoch, as a transport does when a
// restarted node's session comes up.
func (v *vouchTransport) revive(addr ServerAddress) {
	v.mu.Lock()
	delete(v.dead, addr)
	v.epoch++
	close(v.changed)
	v.changed = make(chan struct{})
	v.mu.Unlock()
}

func (v *vouchTransport) LeaseVouch(ServerID, ServerAddress) bool { return v.lease.Load() }

var (
	_ WithQuiescence = (*vouchTransport)(nil)
	_ WithLeaseVouch = (*vouchTransport)(nil)
)

type quiesceCluster struct {
	rafts  []*Raft
	trans  []*vouchTransport
	fsms   []*MockFSM
	confs  []*Config
	stores []*InmemStore
	snaps  []SnapshotStore
	leader int
}

// newQuiesceCluster starts n servers over vouching transports and waits
// for a leader.
func newQuiesceCluster(t *testing.T, n int, tune ...func(*Config)) *quiesceCluster {
	t.Helper()
	return newQuiesceClusterWith(t, n, func() SnapshotStore { return NewInmemSnapshotStore() }, tune...)
}

// newQuiesceClusterWith is newQuiesceCluster with snapshot stores from
// snapStore.
func newQuiesceClusterWith(t *testing.T, n int, snapStore func() SnapshotStore, tune ...func(*Config)) *quiesceCluster {
	t.Helper()
	c := &quiesceCluster{}
	var servers []Server
	for i := range n {
		tr := newVouchTransport(ServerAddress(fmt.Sprintf("s%d", i)))
		c.trans = append(c.trans, tr)
		servers = append(servers, Server{ID: ServerID(fmt.Sprintf("s%d", i)), Address: tr.LocalAddr()})
	}
	for _, a := range c.trans {
		for _, b := range c.trans {
			a.Connect(b.LocalAddr(), b.InmemTransport)
		}
	}
	for i, tr := range c.trans {
		conf := inmemConfig(t)
		conf.LocalID = servers[i].ID
		for _, f := range tune {
			f(conf)
		}
		store := NewInmemStore()
		snaps := snapStore()
		fsm := &MockFSM{}
		if err := BootstrapCluster(conf, store, store, snaps, tr, Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := NewRaft(conf, fsm, store, store, snaps, tr)
		if err != nil {
			t.Fatal(err)
		}
		c.rafts = append(c.rafts, r)
		c.fsms = append(c.fsms, fsm)
		c.confs, c.stores, c.snaps = append(c.confs, conf), append(c.stores, store), append(c.snaps, snaps)
	}
	t.Cleanup(func() {
		for _, r := range c.rafts {
			_ = r.Shutdown().Error()
		}
	})
	c.leader = c.waitLeader(t, -1)
	return c
}

// waitLeader waits for a leader other than not and returns its position.
func (c *quiesceCluster) waitLeader(t *testing.T, not int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, r := range c.rafts {
			if i != not && r.State() == Leader {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no leader other than %d within 10s", not)
	return -1
}

// waitQuiet waits until every follower is quiesced.
func (c *quiesceCluster) waitQuiet(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		quiet := true
		for i, r := range c.rafts {
			if i != c.leader && !r.Quiesced() {
				quiet = false
			}
		}
		if quiet {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("followers did not quiesce within 10s")
}

// restart stops server i as a crash would, the others' transports losing
// it, and starts it again on its stores with an empty FSM and a new
// transport, which the others vouch for in a new epoch.
func (c *quiesceCluster) restart(t *testing.T, i int) {
	t.Helper()
	c.stop(t, i)
	c.start(t, i)
}

// stop shuts server i down; the others lose it.
func (c *quiesceCluster) stop(t *testing.T, i int) {
	t.Helper()
	if err := c.rafts[i].Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	addr := c.trans[i].LocalAddr()
	for j, tr := range c.trans {
		if j != i {
			tr.kill(addr)
		}
	}
}

// start starts server i again on its stores, with a new FSM.
func (c *quiesceCluster) start(t *testing.T, i int) {
	t.Helper()
	addr := c.trans[i].LocalAddr()
	tr := newVouchTransport(addr)
	for j, other := range c.trans {
		if j != i {
			tr.Connect(other.LocalAddr(), other.InmemTransport)
			other.Connect(addr, tr.InmemTransport)
			other.revive(addr)
		}
	}
	fsm := &MockFSM{}
	r, err := NewRaft(c.confs[i], fsm, c.stores[i], c.stores[i], c.snaps[i], tr)
	if err != nil {
		t.Fatal(err)
	}
	c.rafts[i], c.trans[i], c.fsms[i] = r, tr, fsm
}

func (c *quiesceCluster) sent() int64 {
	var n int64
	for _, tr := range c.trans {
		n += tr.sent.Load()
	}
	return n
}

func TestQuiesceIdleGroupSendsNothing(t *testing.T) {
	c := newQuiesceCluster(t, 3)
	if err := c.rafts[c.leader].Apply([]byte("x"), time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	c.waitQuiet(t)
	term := c.rafts[c.leader].CurrentTerm()
	before := c.sent()
	// 20 heartbeat timeouts: unquiesced, the leader would send each
	// follower about 200 heartbeats and 100 commit-index updates.
	time.Sleep(20 * c.rafts[0].config().HeartbeatTimeout)
	if sent := c.sent() - before; sent > 0 {
		t.Errorf("an idle quiesced group sent %d AppendEntries in 20 heartbeat timeouts; want 0", sent)
	}
	if c.rafts[c.leader].State() != Leader || c.rafts[c.leader].CurrentTerm() != term {
		t.Errorf("leadership changed while idle: state %v, term %d (was %d)", c.rafts[c.leader].State(), c.rafts[c.leader].CurrentTerm(), term)
	}
	for i, r := range c.rafts {
		if time.Since(r.LastContact()) > time.Second && i != c.leader {
			t.Errorf("follower %d: LastContact %v ago; a quiesced follower counts as in contact", i, time.Since(r.LastContact()))
		}
	}
}

func TestQuiesceWakesForNewEntries(t *testing.T) {
	c := newQuiesceCluster(t, 3)
	c.waitQuiet(t)
	for round := range 3 {
		if err := c.rafts[c.leader].Apply([]byte(fmt.Sprint(round)), time.Second).Error(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for _, f := range c.fsms {
			for {
				f.Lock()
				n := len(f.logs)
				f.Unlock()
				if n == round+1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: an FSM holds %d entries; want %d", round, n, round+1)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		c.waitQuiet(t)
	}
}

func TestQuiesceLostLeaderIsReplaced(t *testing.T) {
	c := newQuiesceCluster(t, 3)
	c.waitQuiet(t)
	old := c.leader
	addr := c.trans[old].LocalAddr()
	for i, tr := range c.trans {
		if i != old {
			tr.kill(addr)
		}
	}
	next := c.waitLeader(t, old)
	c.leader = next
	if err := c.rafts[next].Apply([]byte("after"), time.Second).Error(); err != nil {
		t.Fatalf("the new leader %d cannot commit: %v", next, err)
	}
}

func TestQuiescedLeaderKeepsItsLeaseOnlyWhileVouched(t *testing.T) {
	c := newQuiesceCluster(t, 3)
	c.waitQuiet(t)
	leader := c.rafts[c.leader]
	time.Sleep(10 * leader.config().LeaderLeaseTimeout)
	if leader.State() != Leader {
		t.Fatalf("a quiesced leader stepped down while its transport vouched for its followers: %v", leader.State())
	}
	for i, tr := range c.trans {
		if i != c.leader {
			c.trans[c.leader].kill(tr.LocalAddr())
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for leader.State() == Leader {
		if time.Now().After(deadline) {
			t.Fatal("the leader kept leading 5s after its transport stopped vouching for both followers")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A group quiesces within a few round trips of its last commit, not at the
// next commit timeout: the leader sends the commit index at once when it
// reaches the end of the log.
func TestQuiesceSoonAfterCommit(t *testing.T) {
	c := newQuiesceCluster(t, 3, func(conf *Config) { conf.CommitTimeout = time.Minute })
	if err := c.rafts[c.leader].Apply([]byte("x"), time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.waitQuiet(t)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("quiesced %v after the commit; want well before the one-minute commit timeout", took)
	}
}

// A follower restarted while its leader had quiesced it learns the commit
// index again without anything new being written: it lost it with its
// process, and the leader, waking on the new epoch, must send it.
func TestQuiescedFollowerRestartedLearnsTheCommitIndex(t *testing.T) {
	c := newQuiesceCluster(t, 3)
	if err := c.rafts[c.leader].Apply([]byte("x"), time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	c.waitQuiet(t)
	f := (c.leader + 1) % 3
	c.restart(t, f)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.fsms[f].Lock()
		n := len(c.fsms[f].logs)
		c.fsms[f].Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted follower applied %d entries in 10s; want 1 (commit index %d, last index %d)",
				n, c.rafts[f].getCommitIndex(), c.rafts[f].getLastIndex())
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.waitQuiet(t)
}

// A leader whose followers' answers stop (here: cut off, with an entry to
// replicate, so nothing is quiesced) keeps its lease while the transport
// vouches for them in it, and steps down once it stops.
func TestLeaseVouchKeepsTheLeaderWhileItLasts(t *testing.T) {
	c := newQuiesceCluster(t, 3)
	c.waitQuiet(t)
	leader, lt := c.rafts[c.leader], c.trans[c.leader]
	lt.lease.Store(true)
	for i, tr := range c.trans {
		if i != c.leader {
			lt.Disconnect(tr.LocalAddr())
		}
	}
	leader.Apply([]byte("unreplicated"), 0) // wakes the followers' replication; never committed
	time.Sleep(10 * leader.config().LeaderLeaseTimeout)
	if leader.State() != Leader {
		t.Fatalf("the leader stepped down while its transport vouched for its followers in the lease: %v", leader.State())
	}
	lt.lease.Store(false)
	deadline := time.Now().Add(5 * time.Second)
	for leader.State() == Leader {
		if time.Now().After(deadline) {
			t.Fatal("the leader kept leading 5s after its followers stopped answering and the lease vouch ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A follower the leader has quiesced can come back from a lost election
// with a newer term than the leader's, its leader's node still vouched for
// by every other: while the leader was paused, the follower's pre-vote
// passed and its vote did not. It then asks the leader for pre-votes,
// which the leader refuses as it has a leader, itself. Heartbeats cannot
// settle it (raft ignores the term in their answers); the leader must
// replicate to the follower again, learn the newer term there and step
// down, so the group elects again. make test's e2e once saw a follower
// campaign for 30 s so.
func TestQuiescedFollowerWithANewerTermIsHeard(t *testing.T) {
	c := newQuiesceCluster(t, 3)
	if err := c.rafts[c.leader].Apply([]byte("x"), time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	c.waitQuiet(t)
	f := (c.leader + 1) % 3
	term := c.rafts[c.leader].CurrentTerm()
	c.rafts[f].setCurrentTerm(term + 1)
	c.trans[f].unvouch(c.trans[c.leader].LocalAddr())
	deadline := time.Now().Add(5 * time.Second)
	for {
		l := -1
		for i, r := range c.rafts {
			if r.State() == Leader {
				l = i
			}
		}
		if l >= 0 && c.rafts[l].CurrentTerm() > term {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader in a newer term 5s after follower %d came back with term %d: leader %d, term %d; follower %v",
				f, term+1, l, term, c.rafts[f].State())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pause cuts server p off as SIGSTOP does: the others lose it (a new epoch
// on their side) and their calls fail. p's transport notices the loss of
// the peers in noticed when it resumes (their pings' answers came late)
// and nothing of the others: it goes on vouching for them in the same
// epoch.
func (c *quiesceCluster) pause(p int, noticed map[int]bool) {
	addr := c.trans[p].LocalAddr()
	for j, tr := range c.trans {
		if j != p {
			tr.kill(addr)
			c.trans[p].Disconnect(tr.LocalAddr())
		}
	}
	for j := range noticed {
		c.trans[p].unvouch(c.trans[j].LocalAddr())
	}
}

// resume reconnects p, every server vouching again in a new epoch for
// those it had lost.
func (c *quiesceCluster) resume(p int, noticed map[int]bool) {
	addr := c.trans[p].LocalAddr()
	for j, tr := range c.trans {
		if j != p {
			tr.Connect(addr, c.trans[p].InmemTransport)
			c.trans[p].Connect(tr.LocalAddr(), tr.InmemTransport)
			tr.revive(addr)
		}
	}
	for j := range noticed {
		c.trans[p].revive(c.trans[j].LocalAddr())
	}
}

// settled waits until every server agrees on one leader in one term and
// that leader commits a write, and returns the leader's position.
func (c *quiesceCluster) settled(t *testing.T, what string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, agree := -1, true
		for i, r := range c.rafts {
			if r.State() == Leader {
				l = i
			}
		}
		for _, r := range c.rafts {
			agree = agree && l >= 0 && r.CurrentTerm() == c.rafts[l].CurrentTerm() &&
				(r == c.rafts[l] || r.State() == Follower && r.Leader() == c.trans[l].LocalAddr())
		}
		if agree && c.rafts[l].Apply([]byte(what), time.Second).Error() == nil {
			return l
		}
		if time.Now().After(deadline) {
			var states []string
			for i, r := range c.rafts {
				states = append(states, fmt.Sprintf("%d: %v term %d leader %q", i, r.State(), r.CurrentTerm(), r.Leader()))
			}
			t.Fatalf("%s: the group did not settle on a leader that commits within 5s: %v", what, states)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Leaders paused for random spans, from shorter than a heartbeat timeout
// to several election rounds, then resumed, each noticing a random part of
// its loss; in some rounds a follower also comes out of the pause with a
// newer term, as from an election it lost (its pre-vote passed, its vote
// did not: a window too narrow to hit in memory). Whatever happened
// meanwhile, the group settles on one leader that commits, and goes quiet
// again. The fixed seed makes a failure repeatable.
func TestQuiescePausedLeadersSettle(t *testing.T) {
	c := newQuiesceCluster(t, 3)
	rng := rand.New(rand.NewPCG(35, 2))
	for round := range 40 {
		c.leader = c.settled(t, fmt.Sprintf("before pause %d", round))
		c.waitQuiet(t)
		p, noticed := c.leader, map[int]bool{}
		for j := range c.rafts {
			if j != p && rng.IntN(2) == 0 {
				noticed[j] = true
			}
		}
		d := time.Duration(rng.IntN(300)) * time.Millisecond
		lost := -1
		if rng.IntN(3) == 0 {
			lost = (p + 1 + rng.IntN(2)) % 3
		}
		c.pause(p, noticed)
		time.Sleep(d)
		if lost >= 0 && c.rafts[lost].State() == Candidate {
			c.rafts[lost].setCurrentTerm(c.rafts[lost].CurrentTerm() + 1)
		}
		c.resume(p, noticed)
		c.leader = c.settled(t, fmt.Sprintf("round %d: leader %d paused %v, noticed %v, follower %d lost an election",
			round, p, d, noticed, lost))
	}
	c.waitQuiet(t)
}

// A follower that comes back after a long absence is replicated to as soon
// as the transport vouches for it again, not when the backoff that grew
// while it was away (to seconds here) runs out.
func TestQuiesceBackoffEndsWhenAFollowerReturns(t *testing.T) {
	c := newQuiesceCluster(t, 3)
	f := (c.leader + 1) % 3
	c.stop(t, f)
	away := time.Now().Add(7 * time.Second)
	n := 0
	for ; time.Now().Before(away); n++ {
		if err := c.rafts[c.leader].Apply([]byte("x"), time.Second).Error(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.start(t, f)
	back := time.Now()
	for {
		c.fsms[f].Lock()
		applied := len(c.fsms[f].logs)
		c.fsms[f].Unlock()
		if applied >= n {
			break
		}
		if time.Since(back) > 10*time.Second {
			t.Fatalf("the returned follower applied %d of %d entries in 10s", applied, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if took := time.Since(back); took > 1500*time.Millisecond {
		t.Fatalf("the returned follower caught up %v after its start", took)
	}
}
