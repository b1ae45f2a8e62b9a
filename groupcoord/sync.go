package groupcoord

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup serves SyncGroup v0-5. A member of a generation being
// completed waits until the leader's assignment is stored (the leader's
// own SyncGroup stores it); in a stable group it gets its assignment at
// once. If ctx ends first, the answer is REQUEST_TIMED_OUT, for a client
// that is gone.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	if c.view.isShareGroup(req.Group) { // Kafka: UNKNOWN_MEMBER_ID for a share group
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	if c.view.isConsumerGroup(req.Group) {
		return c.syncConsumerGroup(req)
	}
	wait, r := c.sync(req)
	if wait != nil {
		select {
		case r = <-wait: // the assignment was stored, or the generation failed
		case <-ctx.Done(): // the connection or server is closing
			r = syncResult{err: kerr.RequestTimedOut}
		}
	}
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if r.err != nil {
		resp.ErrorCode = r.err.Code
		resp.MemberAssignment = []byte{}
		return resp
	}
	resp.ProtocolType, resp.Protocol = r.protocolType, r.protocol
	resp.MemberAssignment = nonNil(r.assignment)
	return resp
}

// sync handles a SyncGroup up to the point where it waits (Kafka's
// doSyncGroup).
func (c *Coordinator) sync(req *kmsg.SyncGroupRequest) (chan syncResult, syncResult) {
	if req.Group == "" {
		return nil, syncResult{err: kerr.InvalidGroupID}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, syncResult{err: kerr.NotCoordinator}
	}
	g := c.lookup(req.Group)
	if g == nil {
		return nil, syncResult{err: kerr.UnknownMemberID}
	}
	if g.state == stateDead {
		return nil, syncResult{err: kerr.CoordinatorNotAvailable}
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return nil, syncResult{err: err}
	}
	switch {
	case req.Generation != g.generation:
		return nil, syncResult{err: kerr.IllegalGeneration}
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		return nil, syncResult{err: kerr.InconsistentGroupProtocol}
	}
	m := g.members[req.MemberID]
	switch g.state {
	case statePreparingRebalance:
		return nil, syncResult{err: kerr.RebalanceInProgress}
	case stateCompletingRebalance:
		wait := make(chan syncResult, 1)
		// A repeated SyncGroup replaces the earlier one, which is
		// answered so that nothing hangs.
		g.answerSync(m, syncResult{err: kerr.RebalanceInProgress})
		m.sync = wait
		c.synced(g, m.id)
		if m.id == g.leader {
			c.storeAssignment(g, req.GroupAssignment)
		}
		return wait, syncResult{}
	case stateStable:
		c.synced(g, m.id)
		c.scheduleHeartbeat(g, m, m.sessionTimeout)
		return nil, syncResult{protocolType: nullable(g.protocolType), protocol: nullable(g.protocol), assignment: m.assignment}
	}
	return nil, syncResult{err: kerr.UnknownMemberID} // Empty: no member can be current
}

// storeAssignment stores the leader's assignment of the current generation
// (members it left out get an empty one) and, once stored, makes the
// group stable and answers the waiting SyncGroups. If the group moved on
// meanwhile, the outcome is ignored; if storing failed, the generation's
// members are answered the error and the group rebalances.
func (c *Coordinator) storeAssignment(g *group, given []kmsg.SyncGroupRequestGroupAssignment) {
	assignments := make(map[string][]byte, len(g.members))
	for _, id := range g.memberIDs() {
		assignments[id] = []byte{}
	}
	for _, a := range given {
		if _, ok := assignments[a.MemberID]; ok {
			assignments[a.MemberID] = slices.Clone(nonNil(a.MemberAssignment))
		}
	}
	gen := g.generation
	c.logger.Info("groupcoord: assignment received from leader", "group", g.id, "generation", gen,
		"leader", g.leader, "members", len(g.members))
	c.write(g, []Record{GroupRecord(g.id, g.metadata(time.Now(), assignments))}, func(err *kerr.Error) {
		if c.groups[g.id] != g || g.state != stateCompletingRebalance || g.generation != gen {
			return
		}
		if err != nil {
			c.logger.Warn("groupcoord: storing the assignment failed", "group", g.id, "generation", gen, "err", err)
			c.resetAssignments(g, err)
			c.maybePrepareRebalance(g, "storing the assignment failed")
			return
		}
		for id, m := range g.members {
			m.assignment = assignments[id] // members added since have none
		}
		g.setState(stateStable, time.Now())
		c.logger.Info("groupcoord: group is stable", "group", g.id, "generation", gen)
		c.propagateAssignments(g)
	})
}

// Heartbeat serves Heartbeat v0-4: it renews a member's session and tells
// it whether a rebalance is in progress.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	heartbeat := c.heartbeat
	if c.view.isConsumerGroup(req.Group) {
		heartbeat = c.heartbeatConsumerGroup
	}
	if c.view.isShareGroup(req.Group) {
		heartbeat = func(*kmsg.HeartbeatRequest) *kerr.Error { return kerr.UnknownMemberID }
	}
	if err := heartbeat(req); err != nil {
		resp.ErrorCode = err.Code
	}
	return resp
}

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
	if req.Group == "" {
		return kerr.InvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kerr.NotCoordinator
	}
	g := c.lookup(req.Group)
	switch {
	case g == nil:
		return kerr.UnknownMemberID
	case g.state == stateDead:
		return kerr.CoordinatorNotAvailable
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stateEmpty:
		return kerr.UnknownMemberID
	case statePreparingRebalance:
		c.scheduleHeartbeat(g, m, m.sessionTimeout)
		return kerr.RebalanceInProgress
	}
	// Stable, or CompletingRebalance: members may heartbeat between
	// their JoinGroup and SyncGroup.
	c.scheduleHeartbeat(g, m, m.sessionTimeout)
	return nil
}

// LeaveGroup serves LeaveGroup v0-5. From v3 on a request may remove
// several members, each answered on its own; a member given by instance
// id alone (an administrator's removal of a static member) is whichever
// member holds that id.
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	leave := c.leave
	if c.view.isConsumerGroup(req.Group) {
		leave = c.leaveConsumerGroup
	}
	if c.view.isShareGroup(req.Group) {
		leave = func(string, []kmsg.LeaveGroupRequestMember) ([]*kerr.Error, *kerr.Error) {
			return nil, kerr.UnknownMemberID
		}
	}
	errs, top := leave(req.Group, leaving)
	if top != nil {
		resp.ErrorCode = top.Code
		return resp
	}
	if req.Version < 3 {
		if errs[0] != nil {
			resp.ErrorCode = errs[0].Code
		}
		return resp
	}
	for i, l := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = l.MemberID, l.InstanceID
		if errs[i] != nil {
			rm.ErrorCode = errs[i].Code
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// leave removes the leaving members; it returns each one's error, or the
// request's.
func (c *Coordinator) leave(groupID string, leaving []kmsg.LeaveGroupRequestMember) ([]*kerr.Error, *kerr.Error) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, kerr.NotCoordinator
	}
	errs := make([]*kerr.Error, len(leaving))
	g := c.lookup(groupID)
	if g == nil {
		for i := range errs {
			errs[i] = kerr.UnknownMemberID
		}
		return errs, nil
	}
	if g.state == stateDead {
		return nil, kerr.CoordinatorNotAvailable
	}
	for i, l := range leaving {
		id := l.MemberID
		switch {
		case id == "":
			cur, ok := "", false
			if l.InstanceID != nil {
				cur, ok = g.static[*l.InstanceID]
			}
			if !ok {
				errs[i] = kerr.UnknownMemberID
				continue
			}
			id = cur
		case g.pending[id] != nil:
			c.removePending(g, id)
			c.tryCompleteJoin(g)
			c.forgetIfUnused(g)
			c.logger.Info("groupcoord: pending member left", "group", g.id, "member", id)
			continue
		default:
			if err := g.validateMember(id, l.InstanceID); err != nil {
				errs[i] = err
				continue
			}
		}
		c.logger.Info("groupcoord: member left", "group", g.id, "member", id, "reason", deref(l.Reason))
		c.removeMember(g, g.members[id], "member "+id+" left")
	}
	return errs, nil
}
