// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

// Compacted entries and stale snapshots (a MiniKafka patch). A follower
// can be ahead of what its leader knows of it: it read AppendEntries whose
// answers the leader never got (the follower was paused and read them on
// SIGCONT), then snapshotted and compacted its log past the leader's next
// entry for it. Upstream, the follower then refuses every AppendEntries
// whose previous entry it compacted; the leader walks back one entry per
// refusal until it reaches its own compacted entries and sends its newest
// snapshot, which may be older than what the follower applied. Installing
// it took back applied entries (lastApplied went backwards) and nothing
// applied them again until the commit index moved, which in an idle group
// it does not; a leader that kept more log than the follower walked back
// to entry 1 and refused forever.
//
// Entries a follower compacted are in its snapshot, so they were applied,
// so committed; every leader holds them (Leader Completeness). Hence:
// such an entry matches whatever the leader sends for its index, and a
// snapshot no newer than the follower's applied index is already part of
// its state. A snapshot that is newer but ends on an entry of another term
// in the follower's log (an old leader's, never committed) replaces the
// whole log (dropConflictingLog).

// compactedTerm reports whether index is an entry this server compacted
// into its newest snapshot, and its term: the snapshot's for the snapshot's
// own index, else the leader's term for it (leaderTerm), which every
// leader holds for a committed entry.
func (r *Raft) compactedTerm(index, leaderTerm uint64) (uint64, bool) {
	snapIndex, snapTerm := r.getLastSnapshot()
	if index == 0 || index > snapIndex {
		return 0, false
	}
	if first, err := r.logs.FirstIndex(); err == nil && first != 0 && index >= first {
		return 0, false // still in the log: compare with the stored entry
	}
	if index == snapIndex {
		return snapTerm, true
	}
	return leaderTerm, true
}

// holdsSnapshot reports whether the follower's applied state already
// includes the snapshot req offers, so that it answers success without
// restoring it: restoring would take back the entries it applied since.
func (r *Raft) holdsSnapshot(req *InstallSnapshotRequest) bool {
	applied := r.getLastApplied()
	if req.LastLogIndex > applied {
		return false
	}
	r.logger.Info("ignoring a snapshot the applied state already holds",
		"snapshot-index", req.LastLogIndex, "applied-index", applied)
	return true
}

// dropConflictingLog discards the whole log when it holds an entry at the
// installed snapshot's last index with another term (Raft's InstallSnapshot
// rule): its entries from there on are an old leader's, never committed,
// and those below it are covered by the snapshot. Upstream kept the entry
// past the compaction, refused the next AppendEntries at that index and
// was sent the snapshot again, forever.
func (r *Raft) dropConflictingLog(req *InstallSnapshotRequest) error {
	var entry Log
	if err := r.logs.GetLog(req.LastLogIndex, &entry); err != nil || entry.Term == req.LastLogTerm {
		return nil
	}
	first, err := r.logs.FirstIndex()
	if err != nil {
		return err
	}
	last, err := r.logs.LastIndex()
	if err != nil {
		return err
	}
	r.logger.Warn("discarding a log that conflicts with the installed snapshot",
		"index", req.LastLogIndex, "ours", entry.Term, "snapshot", req.LastLogTerm)
	if err := r.logs.DeleteRange(first, last); err != nil {
		return err
	}
	// An empty log, as a new follower's: the snapshot is the last entry
	// (getLastEntry), and the compaction after finds nothing to delete.
	r.setLastLog(0, 0)
	return nil
}
