package groupcoord

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The rebalance machinery, after Kafka's GroupCoordinator: a rebalance
// moves a group to PreparingRebalance, where members (re)join; the join
// phase completes when every member has joined or the rebalance timeout
// passes (the initial rebalance of an empty group instead waits its
// initial delay, extended while new members arrive); the new generation
// is CompletingRebalance until the leader's SyncGroup assignment is
// stored, then Stable. Every function here runs with Coordinator.mu held.

// maybePrepareRebalance starts a rebalance unless one is in progress.
func (c *Coordinator) maybePrepareRebalance(g *group, reason string) {
	switch g.state {
	case stateEmpty, stateStable, stateCompletingRebalance:
		c.prepareRebalance(g, reason)
	}
}

func (c *Coordinator) prepareRebalance(g *group, reason string) {
	if g.state == stateCompletingRebalance {
		c.resetAssignments(g, kerr.RebalanceInProgress)
	}
	clear(g.pendingSync)
	c.stopTimer(&g.sync)
	wasEmpty := g.state == stateEmpty
	g.setState(statePreparingRebalance, time.Now())
	c.logger.Info("groupcoord: preparing to rebalance", "group", g.id, "generation", g.generation, "reason", reason)
	if wasEmpty {
		delay := c.cfg.InitialRebalanceDelay
		c.startInitialJoin(g, delay, max(g.rebalanceTimeout()-delay, 0))
		return
	}
	g.joinInitial = false
	c.startTimer(&g.join, g.rebalanceTimeout(), func() { c.completeJoin(g) })
	c.tryCompleteJoin(g)
}

// startInitialJoin waits delay before completing the initial join phase;
// remaining is what is left of the rebalance timeout after it.
func (c *Coordinator) startInitialJoin(g *group, delay, remaining time.Duration) {
	g.joinInitial, g.initDelay, g.initRemaining = true, delay, remaining
	c.startTimer(&g.join, delay, func() {
		if g.newMemberAdded && g.initRemaining != 0 {
			g.newMemberAdded = false
			next := min(c.cfg.InitialRebalanceDelay, g.initRemaining)
			c.startInitialJoin(g, next, max(g.initRemaining-g.initDelay, 0))
			return
		}
		c.completeJoin(g)
	})
}

// tryCompleteJoin completes the join phase early once every member has
// joined, except during the initial delay.
func (c *Coordinator) tryCompleteJoin(g *group) {
	if g.state == statePreparingRebalance && !g.joinInitial && g.hasAllJoined() {
		c.stopTimer(&g.join)
		c.completeJoin(g)
	}
}

// completeJoin ends the join phase (Kafka's onCompleteJoin): dynamic
// members that did not rejoin are dropped, and the next generation
// starts: every joined member gets its JoinGroup answer (the leader with
// the member list) and must SyncGroup within the rebalance timeout. A
// generation without members is stored at once, as an empty group.
func (c *Coordinator) completeJoin(g *group) {
	c.stopTimer(&g.join)
	for _, m := range g.sortedMembers() {
		if m.join == nil && m.instanceID == nil {
			c.dropMember(g, m)
		}
	}
	if !c.electJoinedLeader(g) && len(g.members) > 0 {
		// Only static members that have not rejoined are left: wait
		// another rebalance timeout (their sessions may expire).
		g.joinInitial = false
		c.startTimer(&g.join, g.rebalanceTimeout(), func() { c.completeJoin(g) })
		return
	}
	now := time.Now()
	g.generation++
	clear(g.pendingSync)
	if len(g.members) == 0 {
		g.protocol = ""
		g.setState(stateEmpty, now)
		c.logger.Info("groupcoord: group is empty", "group", g.id, "generation", g.generation)
		c.write(g, []Record{GroupRecord(g.id, g.metadata(now, nil))}, func(err *kerr.Error) {
			if err != nil {
				c.logger.Warn("groupcoord: storing an empty group failed", "group", g.id, "err", err)
			}
		})
		return
	}
	g.protocol = g.selectProtocol()
	g.setState(stateCompletingRebalance, now)
	c.logger.Info("groupcoord: completed join phase", "group", g.id, "generation", g.generation,
		"members", len(g.members), "protocol", g.protocol)
	for _, m := range g.sortedMembers() {
		g.answerJoin(m, g.joinSuccess(m.id, g.leader, m.id == g.leader))
		c.scheduleHeartbeat(g, m, m.sessionTimeout)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	gen := g.generation
	c.startTimer(&g.sync, g.rebalanceTimeout(), func() { c.syncExpired(g, gen) })
}

// electJoinedLeader keeps the leader if it rejoined, or else makes the
// first member that did the leader; false if no member rejoined.
func (c *Coordinator) electJoinedLeader(g *group) bool {
	if g.leader == "" {
		return false
	}
	if g.members[g.leader].join != nil {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.join != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

// syncExpired drops the members of generation gen that did not sync in
// time and rebalances without them.
func (c *Coordinator) syncExpired(g *group, gen int32) {
	if gen != g.generation || (g.state != stateCompletingRebalance && g.state != stateStable) || len(g.pendingSync) == 0 {
		return
	}
	missing := slices.Sorted(maps.Keys(g.pendingSync))
	for _, id := range missing {
		if m := g.members[id]; m != nil {
			c.dropMember(g, m)
		}
	}
	c.prepareRebalance(g, "members did not sync in time")
}

// synced records that a member sent its SyncGroup; the sync deadline is
// cancelled once every member has.
func (c *Coordinator) synced(g *group, id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		c.stopTimer(&g.sync)
	}
}

// resetAssignments fails the waiting SyncGroups of a generation that will
// not become stable.
func (c *Coordinator) resetAssignments(g *group, err *kerr.Error) {
	for _, m := range g.sortedMembers() {
		m.assignment = nil
		if g.answerSync(m, syncResult{err: err}) {
			c.scheduleHeartbeat(g, m, m.sessionTimeout)
		}
	}
}

// propagateAssignments answers the waiting SyncGroups of a stored
// generation.
func (c *Coordinator) propagateAssignments(g *group) {
	for _, m := range g.sortedMembers() {
		r := syncResult{protocolType: nullable(g.protocolType), protocol: nullable(g.protocol), assignment: nonNil(m.assignment)}
		if g.answerSync(m, r) {
			c.scheduleHeartbeat(g, m, m.sessionTimeout)
		}
	}
}

// scheduleHeartbeat expects the member's next heartbeat within d.
func (c *Coordinator) scheduleHeartbeat(g *group, m *member, d time.Duration) {
	c.startTimer(&m.heartbeat, d, func() { c.heartbeatExpired(g, m) })
}

// heartbeatExpired removes a member whose session expired. A member
// waiting in JoinGroup or SyncGroup is alive, except a new member, which
// may wait for its first generation only NewMemberJoinTimeout.
func (c *Coordinator) heartbeatExpired(g *group, m *member) {
	if c.groups[g.id] != g || g.members[m.id] != m {
		return
	}
	if !m.isNew && (m.join != nil || m.sync != nil) {
		return // its join or sync completing schedules the next deadline
	}
	c.logger.Info("groupcoord: member session expired", "group", g.id, "member", m.id)
	c.removeMember(g, m, "session timeout")
}

// removeMember takes a member out of the group and rebalances the rest
// (Kafka's removeMemberAndUpdateGroup). Its waiting requests are answered
// UNKNOWN_MEMBER_ID.
func (c *Coordinator) removeMember(g *group, m *member, reason string) {
	c.dropMember(g, m)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		c.maybePrepareRebalance(g, reason)
	case statePreparingRebalance:
		c.tryCompleteJoin(g)
	}
}

// dropMember removes a member and stops its heartbeat deadline; a
// JoinGroup or SyncGroup of it that still waits is answered
// UNKNOWN_MEMBER_ID, so that the client joins again.
func (c *Coordinator) dropMember(g *group, m *member) {
	g.answerJoin(m, joinError("", kerr.UnknownMemberID))
	g.answerSync(m, syncResult{err: kerr.UnknownMemberID})
	g.remove(m.id)
	c.stopTimer(&m.heartbeat)
}

// addPending records a member id handed out with MEMBER_ID_REQUIRED,
// which expires after the session timeout unless it joins.
func (c *Coordinator) addPending(g *group, id string, session time.Duration) {
	p := &pendingMember{}
	g.pending[id] = p
	c.startTimer(&p.expiry, session, func() {
		if g.pending[id] == p {
			delete(g.pending, id)
			c.tryCompleteJoin(g)
			c.forgetIfUnused(g)
		}
	})
}

func (c *Coordinator) removePending(g *group, id string) {
	if p := g.pending[id]; p != nil {
		c.stopTimer(&p.expiry)
		delete(g.pending, id)
	}
}
