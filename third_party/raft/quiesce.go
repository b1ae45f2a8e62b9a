// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"sync/atomic"
	"time"
)

// Quiescence (a MiniKafka patch; see WithQuiescence). An idle group costs
// timers: a leader heartbeats each follower ten times per heartbeat timeout
// and sends it the commit index every commit timeout, and each follower
// counts down to an election. With a transport that vouches for its peers,
// a leader stops all of that towards a follower that holds the whole log
// committed, and the follower stops counting down, until there is
// something new to replicate or the transport stops vouching.
//
// The leader quiesces a follower only after the follower answered a
// Quiesce heartbeat with Quiesced, and only while nothing was appended
// since it was sent; an append wakes every follower's replication at once
// (dispatchLogs). A follower forgets its quiescence only when its leader
// sends it something new (awakens), which the leader does only after it
// forgot it too. A follower whose transport stops vouching for the leader
// counts down from then on, and starts an election only if the transport
// still does not vouch for the leader when the count ends; if it does, the
// follower goes quiet again, since its leader may not know it woke. A
// quiesced follower that campaigns anyway (its transport saw the leader
// fail for a heartbeat timeout, the leader's did not) sends its leader a
// vote request, on which the leader heartbeats and replicates to it
// again. A leader that stops leading counts down as a follower and
// campaigns, and a vote request of a newer term wakes every follower.

// followerQuiesce is a quiesced follower's leader.
type followerQuiesce struct {
	leader ServerID
	addr   ServerAddress
}

// quiescer is the transport's WithQuiescence, or nil.
func (r *Raft) quiescer() WithQuiescence {
	q, _ := r.trans.(WithQuiescence)
	return q
}

// Quiesced reports whether this server is a follower that waits quietly
// for its leader, vouched for by the transport.
func (r *Raft) Quiesced() bool {
	return r.followerQuiesced()
}

// quiesceFollower records the follower's quiescence on a successful
// Quiesce heartbeat, and reports whether it quiesced: only a follower that
// holds its whole log committed, with a leader the transport vouches for.
func (r *Raft) quiesceFollower(a *AppendEntriesRequest) bool {
	q := r.quiescer()
	if q == nil || !a.Quiesce || len(a.Entries) > 0 || r.getState() != Follower ||
		r.getCommitIndex() != r.getLastIndex() {
		return false
	}
	addr, id := r.LeaderWithID()
	if alive, _ := q.Vouch(id, addr); !alive || id == "" {
		return false
	}
	r.followerQuiesce.Store(&followerQuiesce{leader: id, addr: addr})
	return true
}

// awakens reports whether an AppendEntries ends the follower's quiescence:
// it carries something new (entries, a commit index, a term or a leader).
// A heartbeat or a repeated commit index does not: the leader may still
// count on the follower waiting quietly, and it is harmless for a quiet
// follower to hear from its leader.
func (r *Raft) awakens(a *AppendEntriesRequest) bool {
	fq := r.followerQuiesce.Load()
	return fq != nil && (len(a.Entries) > 0 || a.LeaderCommitIndex > r.getCommitIndex() ||
		a.Term > r.getCurrentTerm() || ServerID(a.ID) != fq.leader)
}

// wakeFollower ends the follower's quiescence because its leader (or a
// newer term) has something new for it, and tells runFollower to count
// down.
func (r *Raft) wakeFollower() {
	if r.followerQuiesce.Swap(nil) != nil {
		asyncNotifyCh(r.followerWakeCh)
	}
}

// followerQuiesced reports whether this server is a quiesced follower whose
// transport vouches for its leader now.
func (r *Raft) followerQuiesced() bool {
	fq := r.followerQuiesce.Load()
	if fq == nil {
		return false
	}
	alive, _ := r.quiescer().Vouch(fq.leader, fq.addr)
	return alive
}

// followerQuiet decides, when the follower's heartbeat timer fires or the
// transport's liveness changes, whether a quiesced follower waits quietly:
// it returns the liveness channel to wait on, or nil to count down. A
// follower that stops waiting counts its leader as contacted until now,
// when the transport last vouched for it.
func (r *Raft) followerQuiet(counting bool) <-chan struct{} {
	q := r.quiescer()
	if q == nil || r.followerQuiesce.Load() == nil {
		return nil
	}
	changed := q.LivenessChanged() // before looking, so no change is missed
	if r.followerQuiesced() {
		return changed
	}
	if !counting {
		r.setLastContact()
	}
	return nil
}

// canQuiesce reports whether the follower of s holds the leader's whole
// log, all of it committed and known by the follower to be committed, and
// the transport vouches for it, with the epoch of that vouch.
func (r *Raft) canQuiesce(q WithQuiescence, s *followerReplication, peer Server) (bool, uint64) {
	last := r.getLastIndex()
	if r.getCommitIndex() != last || atomic.LoadUint64(&s.nextIndex) != last+1 || s.commitSent.Load() != last {
		return false, 0
	}
	return q.Vouch(peer.ID, peer.Address)
}

// leaderQuiesced reports whether the leader has quiesced the follower of s
// and may still leave it alone: nothing new to send, and the transport
// vouches for it in the epoch it quiesced in.
func (r *Raft) leaderQuiesced(s *followerReplication) bool {
	q := r.quiescer()
	if q == nil || !s.quiesced.Load() {
		return false
	}
	s.peerLock.RLock()
	peer := s.peer
	s.peerLock.RUnlock()
	ok, epoch := r.canQuiesce(q, s, peer)
	return ok && epoch == s.quiesceEpoch.Load()
}

// markQuiesced records a Quiesced answer to a heartbeat sent when the log
// ended at last: unless something was appended since, the follower is now
// left alone. The second look catches an append that raced the first
// (dispatchLogs extends the log, then wakes the follower's replication).
func (s *followerReplication) markQuiesced(r *Raft, last, epoch uint64) {
	if r.getLastIndex() != last {
		return
	}
	s.quiesceEpoch.Store(epoch)
	s.quiesced.Store(true)
	if r.getLastIndex() != last {
		s.quiesced.Store(false)
	}
}

// wake ends the follower's quiescence on the leader's side because there is
// something new to replicate. The follower counts as contacted until now,
// when the transport last vouched for it.
func (s *followerReplication) wake() {
	if s.quiesced.Swap(false) {
		s.setLastContact()
	}
	asyncNotifyCh(s.wakeCh)
}

// contactedAt is when the leader last heard from the follower of s, for the
// leader lease: now while the follower is quiesced and vouched for, or while
// the transport vouches for it in the lease (WithLeaseVouch). The lease only
// decides when a leader gives up; commitment still needs the follower's
// answers, so neither changes safety.
func (r *Raft) contactedAt(s *followerReplication, now time.Time) time.Time {
	if r.leaderQuiesced(s) || r.leaseVouched(s) {
		return now
	}
	return s.LastContact()
}

// leaseVouched reports whether the transport vouches for the follower of s
// in the leader lease.
func (r *Raft) leaseVouched(s *followerReplication) bool {
	lv, ok := r.trans.(WithLeaseVouch)
	if !ok {
		return false
	}
	s.peerLock.RLock()
	peer := s.peer
	s.peerLock.RUnlock()
	return lv.LeaseVouch(peer.ID, peer.Address)
}

// allQuiesced reports whether the leader has quiesced every other voter, so
// that its lease needs no timer until the transport's liveness changes.
func (r *Raft) allQuiesced() bool {
	if r.quiescer() == nil {
		return false
	}
	for _, server := range r.configurations.latest.Servers {
		if server.ID == r.localID {
			continue
		}
		s := r.leaderState.replState[server.ID]
		if s == nil || !r.leaderQuiesced(s) {
			return false
		}
	}
	return true
}

// heartbeatWait is what the heartbeat loop of s waits on next: a tick (the
// transport's for the peer, else a timer) while the follower is awake; the
// transport's liveness and s's wake-up while it is quiesced.
func (r *Raft) heartbeatWait(s *followerReplication, peer Server) (tick <-chan time.Time, shared, live, wake <-chan struct{}) {
	q := r.quiescer()
	interval := r.config().HeartbeatTimeout / 10
	if q == nil {
		return randomTimeout(interval), nil, nil, nil
	}
	changed := q.LivenessChanged()
	if r.leaderQuiesced(s) {
		return nil, nil, changed, s.wakeCh
	}
	if s.quiesced.Swap(false) { // the transport stopped vouching: contacted until now
		s.setLastContact()
	}
	if shared = q.HeartbeatTick(peer.Address, interval); shared != nil {
		return nil, shared, nil, nil
	}
	return randomTimeout(interval), nil, nil, nil
}

// commitTimeout is replicate's timer for sending the commit index to an
// idle follower: none while the follower is quiesced, when replicate waits
// for the transport's liveness to change instead. A follower restarted
// meanwhile (a new epoch) lost the commit index with its process, and only
// this timer sends it again while nothing new is written.
func (r *Raft) commitTimeout(s *followerReplication) (<-chan time.Time, <-chan struct{}) {
	if q := r.quiescer(); q != nil {
		changed := q.LivenessChanged() // before looking, so no change is missed
		if r.leaderQuiesced(s) {
			return nil, changed
		}
	}
	return randomTimeout(r.config().CommitTimeout), nil
}

// leaseTimer is the leader's next lease check: after interval, or, while
// every follower is quiesced, when the transport's liveness changes.
func (r *Raft) leaseTimer(interval time.Duration) (<-chan time.Time, <-chan struct{}) {
	if q := r.quiescer(); q != nil {
		changed := q.LivenessChanged()
		if r.allQuiesced() {
			return nil, changed
		}
	}
	return time.After(interval), nil
}

// wakeQuiescedPeer heartbeats and replicates to the follower id again if
// this leader has quiesced it: it asks for votes, so it counts down,
// whatever the leader thought (see the top of this file). It may hold a
// newer term, from an election it lost while the leader was out of reach:
// only replicate looks at the term in an answer (heartbeat does not), and
// it waits for a liveness change while the follower is quiesced, so it is
// woken here to send at once.
func (r *Raft) wakeQuiescedPeer(id ServerID) {
	if r.getState() != Leader {
		return
	}
	if s := r.leaderState.replState[id]; s != nil && s.quiesced.Swap(false) {
		asyncNotifyCh(s.wakeCh)
		asyncNotifyCh(s.triggerCh)
	}
}

// pushIdleCommit sends the followers the commit index at once when it
// reaches the end of the log, instead of at the next commit timeout, so
// that a group that falls idle quiesces within a round trip or two. Under
// load the commit index trails the log and nothing extra is sent. Called
// by the leader's loop when the commit index moves.
func (r *Raft) pushIdleCommit() {
	if r.quiescer() == nil || r.getCommitIndex() != r.getLastIndex() {
		return
	}
	for _, s := range r.leaderState.replState {
		asyncNotifyCh(s.triggerCh)
	}
}
