// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// staleSnapshotCluster is a quiescing group whose servers snapshot only
// when asked (tune adds more), keeping 4 entries behind each snapshot. Its
// snapshots are files: an in-memory store's Open races with a snapshot
// being written.
func staleSnapshotCluster(t *testing.T, tune ...func(*Config)) *quiesceCluster {
	t.Helper()
	snapStore := func() SnapshotStore {
		s, err := NewFileSnapshotStore(t.TempDir(), 2, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return newQuiesceClusterWith(t, 3, snapStore, append([]func(*Config){func(c *Config) {
		c.TrailingLogs = 4
		c.SnapshotThreshold = 1 << 30
	}}, tune...)...)
}

// applyN commits n writes through the leader.
func (c *quiesceCluster) applyN(t *testing.T, prefix string, n int) {
	t.Helper()
	for i := range n {
		if err := c.rafts[c.leader].Apply(fmt.Appendf(nil, "%s%d", prefix, i), time.Second).Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// applyWhileLeading is applyN that stops, reporting false, once the
// leader has lost its leadership: a held follower campaigns after 50 ms,
// and a loaded machine's leader may miss its lease.
func (c *quiesceCluster) applyWhileLeading(t *testing.T, prefix string, n int) bool {
	t.Helper()
	for i := range n {
		err := c.rafts[c.leader].Apply(fmt.Appendf(nil, "%s%d", prefix, i), time.Second).Error()
		if errors.Is(err, ErrLeadershipLost) || errors.Is(err, ErrNotLeader) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return true
}

// waitApplied waits until server i's FSM holds want entries.
func (c *quiesceCluster) waitApplied(t *testing.T, i, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(c.fsms[i].Logs()) != want {
		if time.Now().After(deadline) {
			t.Fatalf("server %d applied %d entries, want %d", i, len(c.fsms[i].Logs()), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sendLeaderSnapshot sends server f the leader's newest snapshot as the
// leader's replication would, and returns the answer.
func (c *quiesceCluster) sendLeaderSnapshot(t *testing.T, f int) InstallSnapshotResponse {
	t.Helper()
	return c.sendLeaderSnapshotVia(t, f, c.trans[c.leader])
}

// sendLeaderSnapshotVia is sendLeaderSnapshot over the transport tr.
func (c *quiesceCluster) sendLeaderSnapshotVia(t *testing.T, f int, tr *vouchTransport) InstallSnapshotResponse {
	t.Helper()
	l := c.rafts[c.leader]
	metas, err := c.snaps[c.leader].List()
	if err != nil || len(metas) == 0 {
		t.Fatalf("leader's snapshots: %v, %v", metas, err)
	}
	meta, rc, err := c.snaps[c.leader].Open(metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	req := &InstallSnapshotRequest{
		RPCHeader: l.getRPCHeader(), SnapshotVersion: meta.Version, Term: l.CurrentTerm(),
		Leader: c.trans[c.leader].EncodePeer(l.localID, l.localAddr), LastLogIndex: meta.Index, LastLogTerm: meta.Term,
		Configuration: EncodeConfiguration(meta.Configuration), ConfigurationIndex: meta.ConfigurationIndex, Size: meta.Size,
	}
	var resp InstallSnapshotResponse
	if err := tr.InstallSnapshot(c.rafts[f].localID, c.trans[f].LocalAddr(), req, &resp, rc); err != nil {
		t.Fatal(err)
	}
	return resp
}

// A follower sent a snapshot older than what it has applied (the leader
// lost its answers and backed up past its own compaction) keeps its state:
// restoring would take back applied entries, and nothing re-applies them
// until the commit index moves, which in an idle group it does not.
func TestStaleSnapshotKeepsAFollowerAhead(t *testing.T) {
	c := staleSnapshotCluster(t)
	c.applyN(t, "a", 10)
	if err := c.rafts[c.leader].Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	c.applyN(t, "b", 10)
	f := (c.leader + 1) % 3
	want := len(c.fsms[c.leader].Logs())
	c.waitApplied(t, f, want)
	applied := c.rafts[f].AppliedIndex()
	if resp := c.sendLeaderSnapshot(t, f); !resp.Success {
		t.Fatalf("older snapshot refused: %+v", resp)
	}
	if got := len(c.fsms[f].Logs()); got != want || c.rafts[f].AppliedIndex() < applied {
		t.Fatalf("after an older snapshot the follower holds %d entries (applied index %d), want %d (%d)",
			got, c.rafts[f].AppliedIndex(), want, applied)
	}
}

// An AppendEntries whose previous entry the follower has compacted into a
// snapshot matches: compacted entries are committed, so the leader holds
// the same. Refused, the leader backs up to a snapshot of its own.
func TestStaleSnapshotCompactedPreviousEntryMatches(t *testing.T) {
	c := staleSnapshotCluster(t)
	c.applyN(t, "a", 20)
	f := (c.leader + 1) % 3
	c.waitApplied(t, f, len(c.fsms[c.leader].Logs()))
	if err := c.rafts[f].Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	first, _ := c.stores[f].FirstIndex()
	last, _ := c.stores[f].LastIndex()
	prev := first - 2
	l := c.rafts[c.leader]
	var prevLog Log
	if err := c.stores[c.leader].GetLog(prev, &prevLog); err != nil {
		t.Fatal(err)
	}
	req := &AppendEntriesRequest{
		RPCHeader: l.getRPCHeader(), Term: l.CurrentTerm(), Leader: c.trans[c.leader].EncodePeer(l.localID, l.localAddr),
		PrevLogEntry: prev, PrevLogTerm: prevLog.Term, LeaderCommitIndex: l.getCommitIndex(),
	}
	for i := prev + 1; i <= last; i++ {
		e := new(Log)
		if err := c.stores[c.leader].GetLog(i, e); err != nil {
			t.Fatal(err)
		}
		req.Entries = append(req.Entries, e)
	}
	var resp AppendEntriesResponse
	if err := c.trans[c.leader].AppendEntries(c.rafts[f].localID, c.trans[f].LocalAddr(), req, &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Success || resp.LastLog != last {
		t.Fatalf("entries %d..%d after compacted entry %d (follower's log %d..%d): success %v, last %d",
			prev+1, last, prev, first, last, resp.Success, resp.LastLog)
	}
}

// Rounds in which a random follower reads its leader's AppendEntries late
// (each failed at once for the leader, as calls to a paused node) while the
// leader commits and snapshots past what it last knew of the follower, so
// that it falls back to its snapshot, which may be older than what the
// follower applied from the late calls. Once the answers flow again, with no new
// write, every replica must hold the same entries. The fixed seed makes a
// failure repeatable.
func TestStaleSnapshotLateReadsKeepReplicasEqual(t *testing.T) {
	c := staleSnapshotCluster(t, func(conf *Config) {
		conf.SnapshotThreshold = 8
		conf.SnapshotInterval = 20 * time.Millisecond
	})
	rng := rand.New(rand.NewPCG(35, 3))
	for round := range 60 {
		c.leader = c.settled(t, fmt.Sprintf("before round %d", round))
		f := (c.leader + 1 + rng.IntN(2)) % 3
		// The leader keeps a random number of entries behind its
		// snapshots: fewer than it writes in the round, and it compacts
		// past where it sends the follower from; more, and it walks back
		// there through the follower's refusals.
		c.setTrailing(t, c.leader, uint64(4+rng.IntN(80)))
		addr := c.trans[f].LocalAddr()
		c.trans[c.leader].hold(addr)
		kept := c.applyWhileLeading(t, fmt.Sprintf("r%d-", round), 10+rng.IntN(50))
		time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
		// The follower snapshots what it read before the leader's next
		// call, compacting past where the leader will send from.
		c.trans[c.leader].release(c.rafts[f].localID, addr, func() { c.compact(t, f) })
		if !kept { // elections too: the replicas must still end equal
			c.leader = c.settled(t, fmt.Sprintf("round %d: after the leader was lost", round))
		}
		c.waitEqual(t, fmt.Sprintf("round %d: follower %d read late", round, f))
	}
}

// waitEqual waits until every server's FSM holds the leader's entries.
func (c *quiesceCluster) waitEqual(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		want, equal := c.fsms[c.leader].Logs(), true
		var held []int
		for _, f := range c.fsms {
			held = append(held, len(f.Logs()))
			equal = equal && slices.EqualFunc(f.Logs(), want, slices.Equal)
		}
		if equal {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: replicas differ 5s later, holding %v entries (leader %d)", what, held, c.leader)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// compact has server i snapshot and keep no entry behind the snapshot.
func (c *quiesceCluster) compact(t *testing.T, i int) {
	t.Helper()
	keep := c.rafts[i].ReloadableConfig().TrailingLogs
	c.setTrailing(t, i, 0)
	_ = c.rafts[i].Snapshot().Error() // ErrNothingNewToSnapshot is fine
	c.setTrailing(t, i, keep)
}

// setTrailing sets how many entries server i keeps behind a snapshot.
func (c *quiesceCluster) setTrailing(t *testing.T, i int, n uint64) {
	t.Helper()
	rc := c.rafts[i].ReloadableConfig()
	rc.TrailingLogs = n
	if err := c.rafts[i].ReloadConfig(rc); err != nil {
		t.Fatal(err)
	}
}

// A follower whose log holds, at a snapshot's last index, an entry of
// another term (an old leader's, never committed) discards its log when it
// installs the snapshot. Upstream kept that entry past the compaction,
// refused the next AppendEntries at that index and was sent the snapshot
// again, forever.
func TestStaleSnapshotConflictingEntryIsDiscarded(t *testing.T) {
	c := staleSnapshotCluster(t)
	c.applyN(t, "a", 10)
	f := (c.leader + 1) % 3
	c.waitApplied(t, f, len(c.fsms[c.leader].Logs()))
	c.stop(t, f)
	last, _ := c.stores[f].LastIndex()
	term := c.rafts[c.leader].CurrentTerm()
	for i := range uint64(5) { // written by an old leader of this term, never sent
		if err := c.stores[f].StoreLog(&Log{Index: last + 1 + i, Term: term, Type: LogCommand, Data: []byte("lost")}); err != nil {
			t.Fatal(err)
		}
	}
	other := 3 - f - c.leader
	if err := c.rafts[c.leader].LeadershipTransferToServer(c.rafts[other].localID, c.trans[other].LocalAddr()).Error(); err != nil {
		t.Fatal(err)
	}
	c.leader = c.waitLeader(t, c.leader)
	c.applyN(t, "b", 2) // the new term's entries at last+1 (its no-op) to last+3
	c.setTrailing(t, c.leader, 0)
	if err := c.rafts[c.leader].Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if snap, _ := c.rafts[c.leader].getLastSnapshot(); snap <= last || snap > last+5 {
		t.Fatalf("the leader's snapshot at %d is not among the follower's entries %d..%d", snap, last+1, last+5)
	}
	c.applyN(t, "c", 5)
	c.start(t, f)
	c.waitEqual(t, "after the follower came back")
}

// Rounds in which the leader is cut off with writes of its own that never
// leave it, the others elect, commit and snapshot at a random point (it
// may fall among the cut-off leader's entries), keeping no entry behind it,
// and the old leader comes back. Each round every replica must end equal.
// The fixed seed makes a failure repeatable.
func TestStaleSnapshotPausedLeaderWithWritesConverges(t *testing.T) {
	c := staleSnapshotCluster(t)
	rng := rand.New(rand.NewPCG(35, 4))
	for round := range 20 {
		c.leader = c.settled(t, fmt.Sprintf("before round %d", round))
		p := c.leader
		c.pause(p, nil)
		var lost []ApplyFuture
		for i := range 1 + rng.IntN(10) {
			lost = append(lost, c.rafts[p].Apply(fmt.Appendf(nil, "lost %d-%d", round, i), 0))
		}
		c.leader = c.waitLeader(t, p)
		n, at := 5+rng.IntN(20), rng.IntN(10)
		c.applyN(t, fmt.Sprintf("r%d-", round), at)
		c.setTrailing(t, c.leader, 0)
		if err := c.rafts[c.leader].Snapshot().Error(); err != nil && !errors.Is(err, ErrNothingNewToSnapshot) {
			t.Fatal(err)
		}
		c.setTrailing(t, c.leader, 4)
		c.applyN(t, fmt.Sprintf("r%d+", round), n)
		c.resume(p, nil)
		for _, f := range lost {
			_ = f.Error() // refused: the leadership was lost
		}
		c.waitEqual(t, fmt.Sprintf("round %d: leader %d cut off with %d writes, snapshot after %d", round, p, len(lost), at))
	}
}

// A follower whose log is empty (it compacted every entry into its own
// snapshot) installs a newer snapshot of its leader's, and then takes
// AppendEntries that repeat entries the snapshot covers. Upstream's
// compaction after the install deleted from index 0 on the empty store,
// which left InmemStore claiming a first index inside the snapshot; the
// follower then refused those entries as missing ("failed to get previous
// log", "failed to get log entry") and its leader walked back, one entry
// per refusal.
func TestStaleSnapshotInstalledOverAnEmptyLog(t *testing.T) {
	c := staleSnapshotCluster(t)
	c.applyN(t, "a", 10)
	f := (c.leader + 1) % 3
	c.waitApplied(t, f, len(c.fsms[c.leader].Logs()))
	c.compact(t, f)
	if first, _ := c.stores[f].FirstIndex(); first != 0 {
		t.Fatalf("the follower's log starts at %d after compacting it all", first)
	}
	addr := c.trans[f].LocalAddr()
	c.trans[c.leader].hold(addr)
	c.applyN(t, "b", 10)
	c.setTrailing(t, c.leader, 100) // the leader keeps its entries
	if err := c.rafts[c.leader].Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	other := c.trans[3-f-c.leader] // the leader's transport holds f's calls
	if resp := c.sendLeaderSnapshotVia(t, f, other); !resp.Success {
		t.Fatalf("newer snapshot refused: %+v", resp)
	}
	snap, _ := c.rafts[f].getLastSnapshot()
	first, _ := c.stores[f].FirstIndex()
	last, _ := c.stores[f].LastIndex()
	if first != 0 && first <= snap || last < first {
		t.Fatalf("after installing snapshot %d over an empty log the store holds %d..%d", snap, first, last)
	}
	l := c.rafts[c.leader]
	prev := snap - 3
	var prevLog Log
	if err := c.stores[c.leader].GetLog(prev, &prevLog); err != nil {
		t.Fatal(err)
	}
	req := &AppendEntriesRequest{
		RPCHeader: l.getRPCHeader(), Term: l.CurrentTerm(), Leader: c.trans[c.leader].EncodePeer(l.localID, l.localAddr),
		PrevLogEntry: prev, PrevLogTerm: prevLog.Term, LeaderCommitIndex: l.getCommitIndex(),
	}
	leaderLast, _ := c.stores[c.leader].LastIndex()
	for i := prev + 1; i <= leaderLast; i++ {
		e := new(Log)
		if err := c.stores[c.leader].GetLog(i, e); err != nil {
			t.Fatal(err)
		}
		req.Entries = append(req.Entries, e)
	}
	var resp AppendEntriesResponse
	if err := other.AppendEntries(c.rafts[f].localID, addr, req, &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Success || resp.LastLog != leaderLast {
		t.Fatalf("entries %d..%d over snapshot %d: success %v, last %d", prev+1, leaderLast, snap, resp.Success, resp.LastLog)
	}
	c.trans[c.leader].release(c.rafts[f].localID, addr, func() {})
	c.waitEqual(t, "after the install")
}

// InmemStore, the stores of these tests, deletes a range from index 0 as
// raft-boltdb does: upstream's computed its last index as 0-1.
func TestStaleSnapshotInmemStoreDeletesFromZero(t *testing.T) {
	for _, held := range [][2]uint64{{0, 0}, {5, 10}} {
		s := NewInmemStore()
		for i := held[0]; held[0] > 0 && i <= held[1]; i++ {
			if err := s.StoreLog(&Log{Index: i, Term: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeleteRange(0, 12); err != nil {
			t.Fatal(err)
		}
		if err := s.StoreLogs([]*Log{{Index: 20, Term: 2}, {Index: 21, Term: 2}}); err != nil {
			t.Fatal(err)
		}
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		if first != 20 || last != 21 {
			t.Fatalf("holding %d..%d, deleting 0..12 and storing 20..21 leaves %d..%d", held[0], held[1], first, last)
		}
	}
}
