package multiraft

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A follower that matched the commit index of an idle group stays in sync
// only while it keeps answering: heartbeats count as contact, and its
// silence for maxLag takes it out although its log still matches.
func TestInSyncNeedsContact(t *testing.T) {
	var p progress
	t0 := time.Unix(1000, 0)
	const lag = 10 * time.Second
	p.leading(t0)
	id := ServerID(2)
	ok := &raft.AppendEntriesResponse{Success: true}
	p.record(id, &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 5, Entries: []*raft.Log{{Index: 6}}, LeaderCommitIndex: 6}, ok, t0, 0)
	rep := Replication{Leader: true, CommitIndex: 6}
	at := func(now time.Time) bool {
		return rep.InSync(p.peers[id].FollowerProgress, now, lag)
	}
	if !at(t0.Add(lag)) {
		t.Fatal("a follower that matched the commit index lag ago is not in sync")
	}
	if at(t0.Add(lag + time.Millisecond)) {
		t.Fatal("a follower silent for longer than the lag limit is still in sync")
	}
	p.record(id, &raft.AppendEntriesRequest{Term: 3}, ok, t0.Add(8*time.Second), 0) // a heartbeat
	if !at(t0.Add(lag + time.Second)) {
		t.Fatal("a heartbeat answered within the lag limit does not keep the follower in sync")
	}
	p.record(id, &raft.AppendEntriesRequest{Term: 3}, &raft.AppendEntriesResponse{}, t0.Add(15*time.Second), 0)
	if at(t0.Add(19 * time.Second)) {
		t.Fatal("a refused heartbeat counted as contact")
	}
	rep.CommitIndex = 9 // the follower no longer matches: CaughtUp decides too
	p.record(id, &raft.AppendEntriesRequest{Term: 3}, ok, t0.Add(20*time.Second), 0)
	if at(t0.Add(21 * time.Second)) {
		t.Fatal("a follower behind the commit index for longer than the lag limit is in sync because it answers heartbeats")
	}
}

// ISR lists the leader, then the followers in sync that up accepts.
func TestISR(t *testing.T) {
	now := time.Unix(1000, 0)
	rep := Replication{Leader: true, CommitIndex: 4, Followers: []FollowerProgress{
		{Node: 2, Match: 4, Contact: now},
		{Node: 3, Match: 4, Contact: now.Add(-time.Minute)},
		{Node: 4, Match: 4, Contact: now},
	}}
	got := rep.ISR(1, now, time.Second, func(n int32) bool { return n != 4 })
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("ISR = %v, want [1 2]", got)
	}
}

// A member is behind while it applies what is committed, while it has
// applied more than it knows to be committed (restored from a snapshot,
// before it hears a commit index), and, as a follower, until it has applied
// what its leaders said was committed.
func TestReplicationBehind(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Replication
		want bool
	}{
		{"caught up", Replication{CommitIndex: 40, AppliedIndex: 40, LeaderCommit: 40}, false},
		{"caught up leader", Replication{Leader: true, CommitIndex: 40, AppliedIndex: 40, LeaderCommit: 12}, false},
		{"applying", Replication{CommitIndex: 41, AppliedIndex: 40, LeaderCommit: 41}, true},
		{"restored leader", Replication{Leader: true, CommitIndex: 0, AppliedIndex: 40}, true},
		{"restored follower", Replication{CommitIndex: 0, AppliedIndex: 40}, true},
		{"follower given part of what is committed", Replication{CommitIndex: 44, AppliedIndex: 44, LeaderCommit: 300}, true},
		{"follower told nothing yet", Replication{}, true},
		{"new leader", Replication{Leader: true}, false},
	} {
		if got := tc.r.Behind(); got != tc.want {
			t.Errorf("%s: %+v.Behind() = %v, want %v", tc.name, tc.r, got, tc.want)
		}
	}
}

// The leader counts on a follower that answered a Quiesce heartbeat with
// Quiesced until it sends it entries (quiesce.go); so does progress. An
// answer to an append sent before that heartbeat, re-sending the commit
// index and nothing new, can arrive after it: it must not end the
// follower's quiescence, or an idle group's follower silently drops out of
// the ISR for good (a CI failure of TestUnderReplicatedByMatchIndex).
func TestLateCommitAnswerKeepsFollowerQuiet(t *testing.T) {
	var p progress
	t0 := time.Unix(1000, 0)
	p.leading(t0)
	id := ServerID(3)
	ok := &raft.AppendEntriesResponse{Success: true}
	quiet := func() bool { return p.peers[id].quiet }
	p.record(id, &raft.AppendEntriesRequest{Term: 2, PrevLogEntry: 3, Entries: []*raft.Log{{Index: 4}}, LeaderCommitIndex: 3}, ok, t0, 0)
	p.record(id, &raft.AppendEntriesRequest{Term: 2, Quiesce: true}, &raft.AppendEntriesResponse{Success: true, Quiesced: true}, t0, 0)
	if !quiet() {
		t.Fatal("a Quiesced answer did not quiet the follower")
	}
	p.record(id, &raft.AppendEntriesRequest{Term: 2, PrevLogEntry: 4, LeaderCommitIndex: 4}, ok, t0, 0)
	if !quiet() {
		t.Fatal("the late answer to a commit-index append ended the follower's quiescence")
	}
	p.record(id, &raft.AppendEntriesRequest{Term: 2}, ok, t0, 0) // a plain heartbeat
	if !quiet() {
		t.Fatal("a heartbeat without Quiesce ended the follower's quiescence")
	}
	p.record(id, &raft.AppendEntriesRequest{Term: 2, PrevLogEntry: 4, Entries: []*raft.Log{{Index: 5}}, LeaderCommitIndex: 4}, ok, t0, 0)
	if quiet() {
		t.Fatal("an append of entries left the follower quiet")
	}
	p.record(id, &raft.AppendEntriesRequest{Term: 2, Quiesce: true}, &raft.AppendEntriesResponse{Success: true, Quiesced: true}, t0, 0)
	p.record(id, &raft.AppendEntriesRequest{Term: 2, Quiesce: true}, ok, t0, 0)
	if quiet() {
		t.Fatal("a Quiesce heartbeat answered without Quiesced left the follower quiet")
	}
}
