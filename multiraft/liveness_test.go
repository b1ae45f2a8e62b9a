package multiraft

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// quietNet is 3 watched hosts with n groups over all three, each of which
// has committed one entry.
func quietNet(t *testing.T, n int, tune func(*Tuning)) (*testNet, [][]*Group) {
	t.Helper()
	net := newTestNet(t, func(tun *Tuning) {
		tun.RebalanceInterval = -1 // leadership transfers are not idleness
		if tune != nil {
			tune(tun)
		}
	})
	net.startWatched()
	groups := make([][]*Group, n)
	for i := range groups {
		for id := int32(1); id <= 3; id++ {
			g, _ := net.open(id, fmt.Sprintf("g%d", i), []int32{1, 2, 3}, fastTiming(), false)
			groups[i] = append(groups[i], g)
		}
	}
	for _, gs := range groups {
		propose(t, gs, 1)
	}
	return net, groups
}

// allQuiet reports whether every follower of every group is quiesced.
func allQuiet(groups [][]*Group) bool {
	for _, gs := range groups {
		for _, g := range gs {
			if !g.IsLeader() && !g.Quiesced() {
				return false
			}
		}
	}
	return true
}

func heartbeatsSent(net *testNet) (hb, calls uint64) {
	for id := int32(1); id <= 3; id++ {
		if h := net.host(id); h != nil {
			s := &h.stats
			hb += s.hbSent.Load()
			calls += s.callsSent.Load()
		}
	}
	return hb, calls
}

func terms(t *testing.T, groups [][]*Group) []uint64 {
	var out []uint64
	for _, gs := range groups {
		out = append(out, gs[leaderOf(t, gs)].Epoch())
	}
	return out
}

func TestIdleGroupsGoQuiet(t *testing.T) {
	net, groups := quietNet(t, 20, nil)
	waitFor(t, "every follower quiesced", func() bool { return allQuiet(groups) })
	// The leaders mark a follower quiesced when its answer arrives, a
	// moment after the follower did: wait for a heartbeat timeout in which
	// nothing was sent.
	waitFor(t, "the leaders to go quiet", func() bool {
		hb, calls := heartbeatsSent(net)
		time.Sleep(fastTiming().HeartbeatTimeout)
		hb2, calls2 := heartbeatsSent(net)
		return hb == hb2 && calls == calls2
	})
	before := terms(t, groups)
	hb0, calls0 := heartbeatsSent(net)
	time.Sleep(10 * fastTiming().HeartbeatTimeout)
	hb1, calls1 := heartbeatsSent(net)
	// Unquiesced, 20 groups send about 2,000 heartbeats and 400 commit
	// updates in 10 heartbeat timeouts.
	if hb1 != hb0 || calls1 != calls0 {
		t.Errorf("idle quiesced groups sent %d heartbeats and %d calls in 10 heartbeat timeouts; want none", hb1-hb0, calls1-calls0)
	}
	if after := terms(t, groups); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("terms changed while idle: %v, then %v", before, after)
	}
	// Quiet followers send nothing, yet stay in the leaders' ISR.
	for i, gs := range groups {
		rep := gs[leaderOf(t, gs)].Replication()
		for _, f := range rep.Followers {
			if now := time.Now(); !rep.InSync(f, now, fastTiming().HeartbeatTimeout) {
				t.Errorf("group %d: quiet follower %d out of sync: contact %v ago, match %d of %d",
					i, f.Node, now.Sub(f.Contact), f.Match, rep.CommitIndex)
			}
		}
	}
	for _, gs := range groups {
		propose(t, gs, 2) // a write wakes the group and commits
	}
	waitFor(t, "quiet again after the writes", func() bool { return allQuiet(groups) })
}

func TestQuiescenceOffKeepsHeartbeating(t *testing.T) {
	net, groups := quietNet(t, 5, func(tun *Tuning) { tun.DisableQuiescence = true })
	time.Sleep(5 * fastTiming().HeartbeatTimeout)
	if allQuiet(groups) {
		t.Fatal("followers quiesced with DisableQuiescence")
	}
	hb0, _ := heartbeatsSent(net)
	time.Sleep(5 * fastTiming().HeartbeatTimeout)
	if hb1, _ := heartbeatsSent(net); hb1 == hb0 {
		t.Error("no heartbeats with DisableQuiescence: the quiet test's zero proves nothing")
	}
}

func TestQuietGroupsOfALostNodeGetLeaders(t *testing.T) {
	net, groups := quietNet(t, 12, nil)
	waitFor(t, "every follower quiesced", func() bool { return allQuiet(groups) })
	// Stop the node that leads the most groups; the others must elect
	// leaders for them and take writes.
	led := map[int32]int{}
	for _, gs := range groups {
		led[int32(leaderOf(t, gs))+1]++
	}
	victim := int32(1)
	for id, n := range led {
		if n > led[victim] {
			victim = id
		}
	}
	net.stop(victim)
	for _, gs := range groups {
		live := append([]*Group(nil), gs...)
		live[victim-1] = nil
		propose(t, live, 3)
	}
}

// A node restarted while its groups were quiet learns each group's commit
// index without anything new being written: it lost it with its process,
// and a leader that had quiesced it must send it again (the metadata group
// of a restarted node stayed empty until the next metadata write).
func TestRestartedFollowerOfQuietGroupsCatchesUp(t *testing.T) {
	net, groups := quietNet(t, 8, nil)
	victim := restartQuietNode(t, net, groups)
	fsms := make([]*countFSM, len(groups))
	for i := range groups {
		groups[i][victim-1], fsms[i] = net.open(victim, fmt.Sprintf("g%d", i), []int32{1, 2, 3}, fastTiming(), false)
	}
	waitFor(t, "the restarted node applied every group's entry", func() bool {
		for _, f := range fsms {
			if st, _ := f.state(); st.n != 1 {
				return false
			}
		}
		return true
	})
	waitFor(t, "quiet again", func() bool { return allQuiet(groups) })
}

// Raft's goroutines read the Host's liveness on every loop, thousands of
// them at once: a change under way must not make them wait (under a
// read-write lock, every writer queued them all behind it).
func TestLivenessReadsDoNotWaitForChanges(t *testing.T) {
	net := newTestNet(t, nil)
	h := net.start(1)
	h.live.answered("peer", nil, time.Now())
	h.live.mu.Lock() // a change under way
	read := make(chan bool)
	go func() {
		alive, _ := h.vouch("peer")
		_ = h.livenessChanged()
		_ = h.heartbeatTick("peer", time.Second) // starts the ticker: a change
		_ = h.heartbeatTick("peer", time.Second)
		read <- alive
	}()
	select {
	case <-read:
		t.Fatal("a new peer's ticker was started while another change held the lock")
	case <-time.After(100 * time.Millisecond):
	}
	h.live.mu.Unlock()
	if !<-read {
		t.Fatal("the Host does not vouch for a peer that answered")
	}
	h.live.mu.Lock()
	defer h.live.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.vouch("peer")
		<-h.heartbeatTick("peer", time.Second) // ticks although a change holds the lock
		h.live.lost("gone")                    // nothing to change
		h.live.expire(time.Now(), time.Hour)   // nothing expired
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("reading the liveness (or a change with nothing to change) waited for a change under way")
	}
}

// While the Host runs many elections, a peer's vouch lasts twice
// LivenessTimeout: both survivors of a large loss answer late meanwhile.
func TestVouchesLastLongerWhileElecting(t *testing.T) {
	net := newTestNet(t, nil)
	h := net.start(1)
	h.live.answered("peer", nil, time.Now().Add(-3*h.tun.LivenessTimeout/2))
	h.electing.Add(1)
	if gone := h.live.expire(time.Now(), h.livenessTimeout()); len(gone) > 0 {
		t.Fatalf("stopped vouching for %v while electing, 1.5 x LivenessTimeout after the last answer", gone)
	}
	h.electing.Add(-1)
	if gone := h.live.expire(time.Now(), h.livenessTimeout()); len(gone) != 1 {
		t.Fatalf("still vouching for the peer 1.5 x LivenessTimeout after its last answer (gone %v)", gone)
	}
}

// While the Host runs many elections, and for a while after, a leader's
// lease counts a follower whose node the Host vouches for as contacted;
// otherwise the lease is raft's own.
func TestLeaseVouchOnlyWhileElectingAndVouched(t *testing.T) {
	net := newTestNet(t, nil)
	h := net.start(1)
	tr := &transport{h: h}
	h.live.answered("peer", nil, time.Now())
	if tr.LeaseVouch("follower", "peer") {
		t.Fatal("vouched for a follower in the lease while not electing")
	}
	h.beginMany()
	if !tr.LeaseVouch("follower", "peer") {
		t.Fatal("did not vouch in the lease for a follower whose node answers, while electing")
	}
	if tr.LeaseVouch("other", "unknown") {
		t.Fatal("vouched in the lease for a follower on a node never heard from")
	}
	h.endMany()
	if !tr.LeaseVouch("follower", "peer") {
		t.Fatal("stopped vouching in the lease the moment the elections ended")
	}
	h.manyEnded.Store(time.Now().Add(-3 * h.tun.LivenessTimeout).UnixNano())
	if tr.LeaseVouch("follower", "peer") {
		t.Fatal("still vouching in the lease 3 x LivenessTimeout after the elections ended")
	}
	h.beginMany()
	defer h.endMany()
	h.live.lost("peer")
	if tr.LeaseVouch("follower", "peer") {
		t.Fatal("vouched in the lease for a follower whose node was lost")
	}
}

// A quiet follower whose node restarts without reopening its groups (a
// replica that cannot open) leaves its leaders' ISR although the node is
// vouched for again: the quiescence it answered belonged to the node's
// previous session.
func TestRestartedFollowerWithoutItsGroupsLeavesISR(t *testing.T) {
	net, groups := quietNet(t, 4, nil)
	victim := restartQuietNode(t, net, groups)
	for i, gs := range groups {
		l := gs[leaderOf(t, gs)]
		waitFor(t, fmt.Sprintf("group %d's leader to drop node %d from its ISR", i, victim), func() bool {
			rep := l.Replication()
			return !slices.Contains(rep.ISR(-1, time.Now(), fastTiming().HeartbeatTimeout, nil), victim)
		})
	}
}

// restartQuietNode waits until every follower is quiesced, then closes the
// groups of a node that leads none of them, if there is one (the others
// keep their leaders and stay quiet), and restarts its Host without them.
func restartQuietNode(t *testing.T, net *testNet, groups [][]*Group) int32 {
	t.Helper()
	waitFor(t, "every follower quiesced", func() bool { return allQuiet(groups) })
	led := map[int32]bool{}
	for _, gs := range groups {
		led[int32(leaderOf(t, gs))+1] = true
	}
	victim := int32(3)
	for id := int32(1); id <= 3; id++ {
		if !led[id] {
			victim = id
		}
	}
	for _, gs := range groups {
		_ = gs[victim-1].Close()
	}
	net.stop(victim)
	net.start(victim)
	net.watchAll()
	return victim
}
