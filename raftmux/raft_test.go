package raftmux

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// replica is one node's member of one group.
type replica struct {
	r     *raft.Raft
	fsm   *countFSM
	trans *GroupTransport
}

// testTiming is the raft timing of startGroup: fast, for small tests.
var testTiming = timing{hb: 250 * time.Millisecond, election: 250 * time.Millisecond, lease: 150 * time.Millisecond, commit: 20 * time.Millisecond}

type timing struct{ hb, election, lease, commit time.Duration }

// startGroup starts group on every mux, one replica per mux, all
// bootstrapped with the same configuration. Replicas shut down when the test
// ends, before the muxes close.
func startGroup(t *testing.T, muxes []*Mux, group string) []*replica {
	t.Helper()
	return startGroupTimed(t, muxes, group, testTiming, nil)
}

// startGroupTimed is startGroup with the given timing; obs, if not nil, is
// registered as an observer on every replica.
func startGroupTimed(t *testing.T, muxes []*Mux, group string, tm timing, obs func(i int) *raft.Observer) []*replica {
	t.Helper()
	var servers []raft.Server
	for i, m := range muxes {
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprintf("n%d", i)), Address: raft.ServerAddress(m.Addr().String())})
	}
	reps := make([]*replica, len(muxes))
	for i, m := range muxes {
		trans, err := m.Transport(group, TransportConfig{Timeout: time.Second})
		if err != nil {
			t.Fatalf("Transport(%q) on mux %d: %v", group, i, err)
		}
		conf := raft.DefaultConfig()
		conf.LocalID = servers[i].ID
		conf.HeartbeatTimeout = tm.hb
		conf.ElectionTimeout = tm.election
		conf.LeaderLeaseTimeout = tm.lease
		conf.CommitTimeout = tm.commit
		conf.Logger = hclog.NewNullLogger()
		store, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(conf, store, store, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatalf("bootstrap %s/%d: %v", group, i, err)
		}
		fsm := &countFSM{}
		r, err := raft.NewRaft(conf, fsm, store, store, snaps, trans)
		if err != nil {
			t.Fatalf("NewRaft %s/%d: %v", group, i, err)
		}
		if obs != nil {
			r.RegisterObserver(obs(i))
		}
		reps[i] = &replica{r: r, fsm: fsm, trans: trans}
		t.Cleanup(func() {
			if err := r.Shutdown().Error(); err != nil {
				t.Errorf("shutdown %s/%d: %v", group, i, err)
			}
		})
	}
	return reps
}

// waitLeader waits until a replica other than skip is leader and returns it.
func waitLeader(t *testing.T, group string, reps []*replica, skip int) int {
	t.Helper()
	leader := -1
	waitFor(t, "a leader in "+group, func() bool {
		for i, rep := range reps {
			if i != skip && rep.r.State() == raft.Leader {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

// apply applies the values first..last, in order, through whichever
// replica other than skip leads, retrying each until it succeeds.
func apply(t *testing.T, group string, reps []*replica, skip int, first, last uint64) {
	t.Helper()
	for v := first; v <= last; v++ {
		cmd := binary.BigEndian.AppendUint64(nil, v)
		waitFor(t, fmt.Sprintf("%s to apply %d", group, v), func() bool {
			for i, rep := range reps {
				if i != skip && rep.r.State() == raft.Leader {
					return rep.r.Apply(cmd, time.Second).Error() == nil
				}
			}
			return false
		})
	}
}

// waitApplied waits until each of reps has applied exactly 1..n.
func waitApplied(t *testing.T, group string, reps []*replica, n uint64) {
	t.Helper()
	for i, rep := range reps {
		waitFor(t, fmt.Sprintf("%s replica %d to apply %d commands", group, i, n), func() bool {
			st, gaps := rep.fsm.state()
			if gaps != 0 {
				t.Fatalf("%s replica %d saw a value out of order", group, i)
			}
			return st == countState{n: n, sum: n * (n + 1) / 2, high: n}
		})
	}
}

// Three nodes, one mux each, two raft groups sharing every port. Both groups
// elect and replicate; closing one group's transport on its leader node
// moves that group's leadership and leaves the other group whole.
func TestTwoRaftGroupsShareEachPort(t *testing.T) {
	var muxes []*Mux
	for range 3 {
		muxes = append(muxes, newMux(t, Config{HeaderTimeout: 2 * time.Second}))
	}
	groupA, groupB := startGroup(t, muxes, "a"), startGroup(t, muxes, "b")

	apply(t, "a", groupA, -1, 1, 10)
	apply(t, "b", groupB, -1, 1, 10)
	waitApplied(t, "a", groupA, 10)
	waitApplied(t, "b", groupB, 10)

	// Cut group a off at its leader node. Group b keeps its replica there.
	la := waitLeader(t, "a", groupA, -1)
	if err := groupA[la].trans.Close(); err != nil {
		t.Fatalf("closing group a's transport on node %d: %v", la, err)
	}
	waitLeader(t, "a", groupA, la)
	waitFor(t, "the cut-off leader to step down", func() bool { return groupA[la].r.State() != raft.Leader })
	apply(t, "a", groupA, la, 11, 15)
	var rest []*replica
	for i, rep := range groupA {
		if i != la {
			rest = append(rest, rep)
		}
	}
	waitApplied(t, "a", rest, 15)
	if st, _ := groupA[la].fsm.state(); st.n != 10 {
		t.Errorf("cut-off replica of group a applied %d commands, want 10", st.n)
	}

	apply(t, "b", groupB, -1, 11, 15)
	waitApplied(t, "b", groupB, 15) // including the replica on node la
	for i, m := range muxes {
		if st := m.Stats(); st.BadHeader != 0 {
			t.Errorf("mux %d: %d bad headers between our own nodes", i, st.BadHeader)
		}
	}
}
