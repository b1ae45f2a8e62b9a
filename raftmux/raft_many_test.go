package raftmux

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Fifty groups on three nodes with the node's default raft timing (500 ms
// heartbeat timeout, so a heartbeat every 50-100 ms per follower) and a
// 20 ms heartbeat window: leaders
// stay put for several seconds with coalesced heartbeats (no replica ever
// becomes a candidate), the heartbeats travel in far fewer frames, and when
// a node dies every group it led elects a new leader that commits.
func TestFiftyGroupsStayStableAndFailOver(t *testing.T) {
	const groups, nodes, killed = 50, 3, 0
	var muxes []*Mux
	for range nodes {
		muxes = append(muxes, newMux(t, Config{HeaderTimeout: 2 * time.Second, HeartbeatWindow: 20 * time.Millisecond}))
	}
	tm := timing{hb: 500 * time.Millisecond, election: 500 * time.Millisecond, lease: 250 * time.Millisecond, commit: 2 * time.Second}
	candidacies := make(chan raft.Observation, groups*nodes)
	becameCandidate := func(int) *raft.Observer {
		return raft.NewObserver(candidacies, false, func(o *raft.Observation) bool {
			s, ok := o.Data.(raft.RaftState)
			return ok && s == raft.Candidate
		})
	}
	all := make([][]*replica, groups)
	names := make([]string, groups)
	began := time.Now()
	for g := range groups {
		names[g] = fmt.Sprintf("g%02d", g)
		all[g] = startGroupTimed(t, muxes, names[g], tm, nil)
	}
	for g := range groups {
		apply(t, names[g], all[g], -1, 1, 1)
	}
	t.Logf("%d groups started and committed in %v", groups, time.Since(began).Round(time.Millisecond))
	for g := range groups {
		waitApplied(t, names[g], all[g], 1)
		for i, rep := range all[g] {
			rep.r.RegisterObserver(becameCandidate(i))
		}
	}

	terms := make([][]uint64, groups)
	for g := range groups {
		for _, rep := range all[g] {
			terms[g] = append(terms[g], rep.r.CurrentTerm())
		}
	}
	before := heartbeatTotals(muxes)
	const quiet = 3 * time.Second
	time.Sleep(quiet)
	after := heartbeatTotals(muxes)
	if n := len(candidacies); n != 0 {
		t.Errorf("%d replicas became candidates while every node was up", n)
	}
	for g := range groups {
		for i, rep := range all[g] {
			if term := rep.r.CurrentTerm(); term != terms[g][i] {
				t.Errorf("group %s replica %d: term %d -> %d while every node was up", names[g], i, terms[g][i], term)
			}
		}
	}
	hbs, frames := after.hbs-before.hbs, after.frames-before.frames
	t.Logf("%d groups x %d replicas: %.0f heartbeats/s in %.0f frames/s", groups, nodes, float64(hbs)/quiet.Seconds(), float64(frames)/quiet.Seconds())
	// 100 follower replicas are each sent a heartbeat every 50-100 ms
	// (at least 3000 in 3 s; half that is the bound, for a loaded machine).
	// How many share a frame depends on how the groups' timers line up and
	// on scheduling, so this test only requires that they do share frames;
	// TestHeartbeatsOfManyGroupsShareFrames checks the gathering itself.
	if hbs < uint64(quiet.Seconds()*100*5) || frames >= hbs {
		t.Errorf("%d heartbeats in %d frames over %v; want at least %d heartbeats, fewer frames than heartbeats", hbs, frames, quiet, uint64(quiet.Seconds()*100*5))
	}

	// Kill node 0 as a crash looks to the others: its port goes away.
	if err := muxes[killed].Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for g := range groups {
		waitLeader(t, names[g], all[g], killed)
	}
	for g := range groups {
		apply(t, names[g], all[g], killed, 2, 2)
	}
	t.Logf("every group has a leader that committed, %v after node %d died", time.Since(start).Round(time.Millisecond), killed)
}

type hbTotals struct{ hbs, frames uint64 }

func heartbeatTotals(muxes []*Mux) hbTotals {
	var t hbTotals
	for _, m := range muxes {
		st := m.Stats()
		t.hbs += st.HeartbeatsReceived
		t.frames += st.HeartbeatFramesReceived
	}
	return t
}
