package groupcoord

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup serves JoinGroup v0-9. clientID is the request header's
// client id and clientHost the client's address, as DescribeGroups shows
// them (Kafka writes "/" and the IP). It returns when the member's
// rebalance completes, or at once with an error; a member with no id gets
// one with MEMBER_ID_REQUIRED from v4 on (KIP-394), except a static
// member. If ctx ends first, the answer is lost, as with a client that
// hung up; the member stays until its session or the rebalance expires.
func (c *Coordinator) JoinGroup(ctx context.Context, clientID, clientHost string, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	if c.view.isShareGroup(req.Group) { // Kafka: a share group speaks no classic protocol
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = kerr.InconsistentGroupProtocol.Code, -1
		return resp
	}
	if c.view.isConsumerGroup(req.Group) {
		if resp, ok := c.joinConsumerGroup(ctx, clientID, clientHost, req); ok {
			return resp
		}
	}
	wait, r := c.join(clientID, clientHost, req)
	if wait != nil {
		select {
		case r = <-wait: // the rebalance completed, or the member was removed
		case <-ctx.Done(): // the connection or server is closing
			r = joinError(req.MemberID, kerr.RequestTimedOut)
		}
	}
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if r.err != nil {
		resp.ErrorCode = r.err.Code
	}
	resp.Generation = r.generation
	resp.ProtocolType, resp.Protocol = r.protocolType, r.protocol
	resp.LeaderID = r.leader
	resp.SkipAssignment = r.skipAssignment
	resp.MemberID = r.memberID
	resp.Members = r.members
	return resp
}

// joinArgs is a JoinGroup request with its timeouts resolved.
type joinArgs struct {
	req                *kmsg.JoinGroupRequest
	clientID, host     string
	protocols          []kmsg.JoinGroupRequestProtocol // deduplicated, copied
	session, rebalance time.Duration
}

// join handles a JoinGroup up to the point where it waits: it returns the
// channel its answer will arrive on, or the answer.
func (c *Coordinator) join(clientID, host string, req *kmsg.JoinGroupRequest) (chan joinResult, joinResult) {
	a := joinArgs{req: req, clientID: clientID, host: host,
		session:   time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		rebalance: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
	}
	if req.Version == 0 || req.RebalanceTimeoutMillis < 0 {
		a.rebalance = a.session // v0 has one timeout for both
	}
	switch {
	case !validGroupID(req.Group):
		return nil, joinError(req.MemberID, kerr.InvalidGroupID)
	case req.InstanceID != nil && len(*req.InstanceID) > maxMemberIDPrefix:
		// Its member ids could not be encoded by non-flexible answers.
		return nil, joinError(req.MemberID, kerr.InvalidRequest)
	case a.session < c.cfg.MinSessionTimeout || a.session > c.cfg.MaxSessionTimeout:
		return nil, joinError(req.MemberID, kerr.InvalidSessionTimeout)
	case joinSize(clientID, host, req) > c.cfg.MaxRecordBytes:
		// More than a group record may hold: it could never be stored.
		return nil, joinError(req.MemberID, kerr.InvalidRequest)
	}
	a.protocols = dedupProtocols(req.Protocols)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, joinError(req.MemberID, kerr.NotCoordinator)
	}
	g := c.lookup(req.Group)
	if g == nil {
		if req.MemberID != "" {
			return nil, joinError(req.MemberID, kerr.UnknownMemberID)
		}
		g = newGroup(req.Group, time.Now())
		c.groups[g.id] = g
		defer c.forgetIfUnused(g)
	}
	if !c.acceptJoining(g, req.MemberID) {
		if m := g.members[req.MemberID]; m != nil {
			c.removeMember(g, m, "group.max.size reached")
		}
		c.removePending(g, req.MemberID)
		return nil, joinError("", kerr.GroupMaxSizeReached)
	}
	var wait chan joinResult
	var r joinResult
	if req.MemberID == "" {
		wait, r = c.joinNew(g, a)
	} else {
		wait, r = c.joinExisting(g, a)
	}
	c.tryCompleteJoin(g)
	return wait, r
}

// forgetIfUnused drops a group that exists only in memory and holds
// nothing: one created by a refused JoinGroup, or whose only pending
// member id expired or left.
func (c *Coordinator) forgetIfUnused(g *group) {
	if g.state != stateEmpty || len(g.members) > 0 || len(g.pending) > 0 || c.view.HasGroup(g.id) {
		return
	}
	if g.lastWrite != nil {
		select {
		case <-g.lastWrite: // written and since deleted from the View
		default:
			return // a write is in flight
		}
	}
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
	}
}

// joinSize is what a member's JoinGroup makes the coordinator hold.
func joinSize(clientID, host string, req *kmsg.JoinGroupRequest) int {
	n := len(clientID) + len(host) + len(req.ProtocolType) + len(req.MemberID) + len(deref(req.InstanceID))
	for _, p := range req.Protocols {
		n += len(p.Name) + len(p.Metadata)
	}
	return n
}

// dedupProtocols copies a member's protocols, keeping the first of each
// name (Kafka's request collection is keyed by name).
func dedupProtocols(ps []kmsg.JoinGroupRequestProtocol) []kmsg.JoinGroupRequestProtocol {
	out := make([]kmsg.JoinGroupRequestProtocol, 0, len(ps))
	for _, p := range ps {
		if !slices.ContainsFunc(out, func(q kmsg.JoinGroupRequestProtocol) bool { return q.Name == p.Name }) {
			out = append(out, kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: slices.Clone(nonNil(p.Metadata))})
		}
	}
	return out
}

// acceptJoining is Kafka's group.max.size check, which also counts the
// member ids handed out and not yet joined with.
func (c *Coordinator) acceptJoining(g *group, id string) bool {
	if g.pending[id] != nil {
		return true
	}
	limit := c.cfg.MaxGroupSize
	switch g.state {
	case statePreparingRebalance:
		if m := g.members[id]; m != nil && m.join != nil {
			return true
		}
		return g.awaiting+len(g.pending) < limit
	case stateCompletingRebalance, stateStable:
		return g.members[id] != nil || len(g.members)+len(g.pending) < limit
	}
	return len(g.pending) < limit
}

// joinNew handles a JoinGroup without a member id.
func (c *Coordinator) joinNew(g *group, a joinArgs) (chan joinResult, joinResult) {
	if g.state == stateDead {
		return nil, joinError("", kerr.CoordinatorNotAvailable)
	}
	if !g.supportsProtocols(a.req.ProtocolType, a.protocols) {
		return nil, joinError("", kerr.InconsistentGroupProtocol)
	}
	id := c.newMemberID(a.clientID, a.req.InstanceID)
	if inst := a.req.InstanceID; inst != nil {
		if old, ok := g.static[*inst]; ok {
			return c.replaceStatic(g, old, id, a), joinResult{}
		}
		return c.addMember(g, id, a), joinResult{}
	}
	if a.req.Version >= 4 {
		c.addPending(g, id, a.session)
		return nil, joinError(id, kerr.MemberIDRequired)
	}
	return c.addMember(g, id, a), joinResult{}
}

// joinExisting handles a JoinGroup with a member id.
func (c *Coordinator) joinExisting(g *group, a joinArgs) (chan joinResult, joinResult) {
	id := a.req.MemberID
	if g.state == stateDead {
		return nil, joinError(id, kerr.CoordinatorNotAvailable)
	}
	if !g.supportsProtocols(a.req.ProtocolType, a.protocols) {
		return nil, joinError(id, kerr.InconsistentGroupProtocol)
	}
	if g.pending[id] != nil {
		if a.req.InstanceID != nil {
			return nil, joinError(id, kerr.UnknownMemberID) // pending ids are dynamic members'
		}
		return c.addMember(g, id, a), joinResult{}
	}
	if err := g.validateMember(id, a.req.InstanceID); err != nil {
		return nil, joinError(id, err)
	}
	m := g.members[id]
	wait := make(chan joinResult, 1)
	switch g.state {
	case statePreparingRebalance:
		g.update(m, a.protocols, a.rebalance, a.session, wait)
	case stateCompletingRebalance:
		if m.matches(a.protocols) {
			// A retry of the join that completed: the same answer.
			return nil, g.joinSuccess(id, g.leader, id == g.leader)
		}
		g.update(m, a.protocols, a.rebalance, a.session, wait)
		c.maybePrepareRebalance(g, "member "+id+" changed its metadata")
	case stateStable:
		if id != g.leader && m.matches(a.protocols) {
			return nil, g.joinSuccess(id, g.leader, false)
		}
		// A leader rejoins to make the group rebalance (for example
		// on a topic change that leaves its metadata the same).
		g.update(m, a.protocols, a.rebalance, a.session, wait)
		c.maybePrepareRebalance(g, "member "+id+" rejoined")
	default:
		return nil, joinError(id, kerr.UnknownMemberID)
	}
	return wait, joinResult{}
}

// validateMember checks a request's member id and instance id against
// the group (Kafka's validateCurrentMember).
func (g *group) validateMember(id string, instanceID *string) *kerr.Error {
	if instanceID != nil {
		cur, ok := g.static[*instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID
		case cur != id:
			return kerr.FencedInstanceID
		}
	}
	if g.members[id] == nil {
		return kerr.UnknownMemberID
	}
	return nil
}

// addMember adds a new member whose JoinGroup waits for the rebalance it
// starts (or joins).
func (c *Coordinator) addMember(g *group, id string, a joinArgs) chan joinResult {
	wait := make(chan joinResult, 1)
	m := &member{
		id:               id,
		instanceID:       a.req.InstanceID,
		clientID:         a.clientID,
		clientHost:       a.host,
		rebalanceTimeout: a.rebalance,
		sessionTimeout:   a.session,
		protocolType:     a.req.ProtocolType,
		protocols:        a.protocols,
		join:             wait,
		isNew:            true,
	}
	if g.state == statePreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	c.removePending(g, id)
	g.add(m)
	c.scheduleHeartbeat(g, m, NewMemberJoinTimeout)
	c.maybePrepareRebalance(g, "member "+id+" joined")
	return wait
}

// replaceStatic hands a static member's place to a new member id (Kafka's
// updateStaticMemberAndRebalance): the old id is fenced, its waiting
// requests answered FENCED_INSTANCE_ID. A stable group whose selected
// protocol stays the same stores the new id and answers with the current
// generation, without a rebalance; otherwise the group rebalances.
func (c *Coordinator) replaceStatic(g *group, oldID, newID string, a joinArgs) chan joinResult {
	m := g.members[oldID]
	g.answerJoin(m, joinError(oldID, kerr.FencedInstanceID))
	g.answerSync(m, syncResult{err: kerr.FencedInstanceID})
	oldLeader := g.leader
	oldProtocols, oldRebalance, oldSession := m.protocols, m.rebalanceTimeout, m.sessionTimeout
	g.rename(m, newID)
	wait := make(chan joinResult, 1)
	g.update(m, a.protocols, a.rebalance, a.session, wait)
	c.scheduleHeartbeat(g, m, m.sessionTimeout)
	c.logger.Info("groupcoord: static member rejoined", "group", g.id, "instance", *m.instanceID,
		"old", oldID, "member", newID)

	switch g.state {
	case stateStable:
		if g.selectProtocol() != g.protocol {
			c.prepareRebalance(g, "static member "+newID+" changed its protocols")
			break
		}
		gen := g.generation
		skip := a.req.Version >= 9
		c.write(g, []Record{GroupRecord(g.id, g.metadata(time.Now(), nil))}, func(err *kerr.Error) {
			if c.groups[g.id] != g || g.members[newID] != m || m.join != wait {
				return // replaced or answered meanwhile
			}
			if err != nil {
				// The new id is not stored: the old one stays the member.
				c.logger.Warn("groupcoord: storing a static member's new id failed", "group", g.id, "err", err)
				g.answerJoin(m, joinResult{err: err, generation: gen, protocolType: nullable(g.protocolType),
					protocol: nullable(g.protocol), leader: oldLeader})
				g.update(m, oldProtocols, oldRebalance, oldSession, nil)
				g.rename(m, oldID)
				c.scheduleHeartbeat(g, m, m.sessionTimeout)
				return
			}
			if skip {
				// JoinGroup v9 (KIP-814): the leader learns it leads,
				// but does not assign the stable generation again.
				isLeader := g.leader == newID
				r := g.joinSuccess(newID, g.leader, isLeader)
				r.skipAssignment = isLeader
				g.answerJoin(m, r)
				return
			}
			// Before v9 the old leader id is returned, so that a
			// rejoining leader does not assign a generation the stable
			// group would not propagate.
			g.answerJoin(m, g.joinSuccess(newID, oldLeader, false))
		})
	case stateCompletingRebalance:
		// The leader may be assigning with the old id: start over.
		c.prepareRebalance(g, "static member "+newID+" rejoined during the sync phase")
	}
	return wait
}
