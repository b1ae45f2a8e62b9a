package groupcoord

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Classic members inside a consumer group (Kafka 4.0's online migration):
// a consumer that speaks JoinGroup/SyncGroup/Heartbeat is a member of the
// consumer group like a KIP-848 one, its subscription and owned
// partitions read from its JoinGroup's consumer protocol metadata. A
// JoinGroup answers at once with the member's epoch as the generation
// (no member is the classic leader), SyncGroup hands out its current
// assignment, and Heartbeat answers REBALANCE_IN_PROGRESS while it must
// rejoin: the group epoch moved past it, it has partitions to revoke, or
// partitions it waits for are free.

// joinConsumerGroup serves a JoinGroup for a consumer group; ok is false
// when the classic path should serve it instead (the group is gone or was
// empty, and is now a classic group's to create).
func (c *Coordinator) joinConsumerGroup(ctx context.Context, clientID, host string, req *kmsg.JoinGroupRequest) (resp *kmsg.JoinGroupResponse, ok bool) {
	resp = req.ResponseKind().(*kmsg.JoinGroupResponse)
	fail := func(memberID string, err *kerr.Error) (*kmsg.JoinGroupResponse, bool) {
		resp.ErrorCode, resp.MemberID, resp.Generation = err.Code, memberID, -1
		return resp, true
	}
	l, err := c.acquire(ctx, req.Group)
	if err != nil {
		return fail(req.MemberID, err)
	}
	defer c.release(l)
	g, isCG := c.view.ConsumerGroup(req.Group)
	if !isCG {
		return nil, false
	}
	if len(g.Members) == 0 { // Kafka's offline migration: the classic group takes its place
		if err := c.append(ctx, consumerGroupTombstones(req.Group)); err != nil {
			return fail(req.MemberID, err)
		}
		return nil, false
	}
	sub, err := c.checkClassicJoin(req)
	if err != nil {
		return fail(req.MemberID, err)
	}
	memberID := req.MemberID
	if memberID == "" {
		memberID = c.newConsumerMemberID()
		if req.Version >= 4 && req.InstanceID == nil {
			return fail(memberID, kerr.MemberIDRequired)
		}
	}
	op := c.opOn(req.Group, g)
	op.self = memberID
	m, err := op.classicMember(req, memberID)
	if err != nil {
		return fail(req.MemberID, err)
	}
	op.updateClassic(m, req, sub, clientID, host)
	op.finish()
	m = op.reconcileMember(m, op.ownedFrom(sub.OwnedPartitions))
	if err := c.append(ctx, op.records()); err != nil {
		return fail(req.MemberID, err)
	}
	c.keepRegexes(req.Group, op.resolved)
	c.afterHeartbeat(req.Group, l, op, m)
	typ, proto := consumerProtocolType, m.Classic.Protocols[0].Name
	resp.MemberID, resp.Generation, resp.ProtocolType, resp.Protocol = memberID, m.Epoch, &typ, &proto
	return resp, true
}

// checkClassicJoin validates a classic JoinGroup into a consumer group and
// reads its subscription.
func (c *Coordinator) checkClassicJoin(req *kmsg.JoinGroupRequest) (*kmsg.ConsumerMemberMetadata, *kerr.Error) {
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return nil, kerr.InvalidSessionTimeout
	}
	if req.ProtocolType != consumerProtocolType || len(req.Protocols) == 0 {
		return nil, kerr.InconsistentGroupProtocol
	}
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(req.Protocols[0].Metadata); err != nil || len(sub.Topics) > maxSubscribedTopics {
		return nil, kerr.InconsistentGroupProtocol
	}
	return &sub, nil
}

// classicMember finds or admits the classic member of a JoinGroup; a
// static member rejoining with a new member id replaces its old one.
func (op *consumerOp) classicMember(req *kmsg.JoinGroupRequest, memberID string) (*ConsumerMember, *kerr.Error) {
	g := op.g
	m := g.Members[memberID]
	if m == nil && req.InstanceID != nil {
		if old := g.static(*req.InstanceID); old != nil {
			if old.Classic == nil {
				return nil, kerr.UnreleasedInstanceID
			}
			op.remove(old.ID)
		}
	}
	switch {
	case m != nil && m.Classic == nil:
		return nil, kerr.InconsistentGroupProtocol // a KIP-848 member's id
	case m != nil:
		return m, nil
	case req.MemberID != "" && req.InstanceID == nil:
		return nil, kerr.UnknownMemberID
	case len(g.Members) >= op.c.cfg.Consumer.MaxSize:
		return nil, kerr.GroupMaxSizeReached
	}
	m = &ConsumerMember{ID: memberID}
	g.Members[memberID] = m
	op.bump()
	return m, nil
}

// updateClassic applies a JoinGroup to its member and records it.
func (op *consumerOp) updateClassic(m *ConsumerMember, req *kmsg.JoinGroupRequest, sub *kmsg.ConsumerMemberMetadata, clientID, host string) {
	topics := slices.Compact(slices.Sorted(slices.Values(sub.Topics)))
	if !slices.Equal(topics, m.Topics) || m.Topics == nil || m.Regex != nil {
		op.bump()
	}
	m.Topics, m.Regex, m.Assignor = topics, nil, nil
	if sub.Rack != nil {
		m.RackID = sub.Rack
	}
	m.InstanceID, m.ClientID, m.ClientHost = req.InstanceID, clientID, host
	m.RebalanceTimeout = req.RebalanceTimeoutMillis
	if req.Version == 0 {
		m.RebalanceTimeout = req.SessionTimeoutMillis
	}
	cm := &ClassicMember{SessionTimeout: req.SessionTimeoutMillis}
	for _, p := range req.Protocols {
		cm.Protocols = append(cm.Protocols, ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
	}
	m.Classic, m.hasMeta = cm, true
	op.recs = append(op.recs, ConsumerMemberRecord(op.id, m))
}

// ownedFrom is a classic member's owned partitions by topic id (an eager
// member, which revoked everything before joining, owns none).
func (op *consumerOp) ownedFrom(owned []kmsg.ConsumerMemberMetadataOwnedPartition) Assignment {
	out := Assignment{}
	for _, o := range owned {
		if t, ok := op.topics.get(o.Topic); ok {
			out[t.ID] = append(out[t.ID], o.Partitions...)
		}
	}
	return out
}

// classicMemberOf checks a classic request's member against the group:
// UNKNOWN_MEMBER_ID if unknown or a KIP-848 member, FENCED_INSTANCE_ID if
// its instance id belongs to another member.
func classicMemberOf(g *ConsumerGroup, memberID string, instanceID *string) (*ConsumerMember, *kerr.Error) {
	m := g.Members[memberID]
	if instanceID != nil {
		if s := g.static(*instanceID); s != nil && s.ID != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	if m == nil || m.Classic == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// syncConsumerGroup serves a SyncGroup of a classic member of a consumer
// group: its current assignment, once it joined in the group's epoch.
func (c *Coordinator) syncConsumerGroup(req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.MemberAssignment = []byte{}
	g, ok := c.view.ConsumerGroup(req.Group)
	if !ok {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	m, err := classicMemberOf(g, req.MemberID, req.InstanceID)
	switch {
	case err != nil:
	case req.Generation != m.Epoch:
		err = kerr.IllegalGeneration
	case (req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType) ||
		(req.Protocol != nil && *req.Protocol != m.Classic.Protocols[0].Name):
		err = kerr.InconsistentGroupProtocol
	case g.Epoch > m.Epoch && m.State != memberUnrevokedPartitions:
		err = kerr.RebalanceInProgress
	}
	if err != nil {
		resp.ErrorCode = err.Code
		return resp
	}
	c.renewClassic(req.Group, m, false)
	typ, proto := consumerProtocolType, m.Classic.Protocols[0].Name
	resp.ProtocolType, resp.Protocol = &typ, &proto
	resp.MemberAssignment = c.classicAssignment(m)
	return resp
}

// classicAssignment encodes a member's assigned partitions in the
// consumer protocol, at the version of its subscription.
func (c *Coordinator) classicAssignment(m *ConsumerMember) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	if md := m.Classic.Protocols[0].Metadata; len(md) >= 2 {
		a.Version = min(int16(md[0])<<8|int16(md[1]), 3)
	}
	topics := newTopicCache(c.cfg.Topics)
	for _, id := range m.Assigned.sortedIDs() {
		if name := topics.name(id); name != "" {
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: name, Partitions: slices.Clone(m.Assigned[id])})
		}
	}
	return a.AppendTo(nil)
}

// renewClassic renews a classic member's session; while it is asked to
// rejoin (rejoin), no further than its rebalance timeout after it was
// first asked, as Kafka's join timeout fences a member that never does.
func (c *Coordinator) renewClassic(group string, m *ConsumerMember, rejoin bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	l := c.consumerGroup(group)
	c.armMember(group, l, m, true)
	lm := l.members[m.ID]
	if !rejoin {
		lm.rejoinBy = time.Time{}
		return
	}
	if lm.rejoinBy.IsZero() {
		lm.rejoinBy = time.Now().Add(time.Duration(max(m.RebalanceTimeout, 0)) * time.Millisecond)
	}
	if lm.rejoinBy.Before(lm.sessionEnd) {
		id := m.ID
		lm.sessionEnd = lm.rejoinBy
		c.startTimer(&lm.session, time.Until(lm.rejoinBy), func() { c.startFence(group, id, false) })
	}
}

// heartbeatConsumerGroup serves a Heartbeat of a classic member of a
// consumer group.
func (c *Coordinator) heartbeatConsumerGroup(req *kmsg.HeartbeatRequest) *kerr.Error {
	g, ok := c.view.ConsumerGroup(req.Group)
	if !ok {
		return kerr.UnknownMemberID
	}
	m, err := classicMemberOf(g, req.MemberID, req.InstanceID)
	if err != nil {
		return err
	}
	if req.Generation != m.Epoch {
		return kerr.IllegalGeneration
	}
	rejoin := m.Epoch < g.Epoch || m.State == memberUnrevokedPartitions ||
		(m.State == memberUnreleasedPartitions && releasedNow(g, m))
	c.renewClassic(req.Group, m, rejoin)
	if rejoin {
		return kerr.RebalanceInProgress
	}
	return nil
}

// releasedNow reports whether a partition m waits for is free now.
func releasedNow(g *ConsumerGroup, m *ConsumerMember) bool {
	owners := ownerEpochs(g, m.ID)
	for id, ps := range m.Target {
		for _, p := range ps {
			if _, held := owners[id][p]; !held && !slices.Contains(m.Assigned[id], p) {
				return true
			}
		}
	}
	return false
}

// leaveConsumerGroup serves a LeaveGroup of classic members of a consumer
// group: each leaving member's error, or the request's.
func (c *Coordinator) leaveConsumerGroup(group string, leaving []kmsg.LeaveGroupRequestMember) ([]*kerr.Error, *kerr.Error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.CommitTimeout)
	defer cancel()
	l, err := c.acquire(ctx, group)
	if err != nil {
		return nil, err
	}
	defer c.release(l)
	g, ok := c.view.ConsumerGroup(group)
	if !ok {
		return nil, kerr.UnknownMemberID
	}
	op := c.opOn(group, g)
	errs := make([]*kerr.Error, len(leaving))
	for i, lm := range leaving {
		id := lm.MemberID
		if lm.InstanceID != nil && id == "" {
			if s := g.static(*lm.InstanceID); s != nil {
				id = s.ID
			}
		}
		if _, errs[i] = classicMemberOf(op.g, id, lm.InstanceID); errs[i] == nil {
			op.remove(id)
		}
	}
	if len(op.gone) == 0 {
		return errs, nil
	}
	op.finish()
	if err := c.append(ctx, op.records()); err != nil {
		return nil, err
	}
	c.afterHeartbeat(group, l, op, nil)
	return errs, nil
}
