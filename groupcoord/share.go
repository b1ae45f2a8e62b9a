package groupcoord

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-932 share groups. Like KIP-848 consumer groups, their state is the
// View's: a request takes the group's turn (cgLive.sem; a group id is
// never both), reads the group from the View, computes the records of
// what changes and answers once they are applied. Only the session
// timers live on the coordinator alone, on the leader's clock; a session
// that ends removes its member through the Log.

// maxShareMemberIDBytes bounds a share member id: clients make it, a
// UUID (Kafka accepts at most 36 characters).
const maxShareMemberIDBytes = 36

// ShareGroupHeartbeat serves ShareGroupHeartbeat v1: a member joins
// (epoch 0, with the member id it made), heartbeats, or leaves (-1); the
// answer carries its epoch and, when it joined, sent its subscription or
// its assignment changed, its assignment. It returns once what changed
// is committed.
func (c *Coordinator) ShareGroupHeartbeat(ctx context.Context, clientID, clientHost string, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(c.cfg.Share.HeartbeatInterval.Milliseconds())
	fail := func(err *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode, resp.MemberEpoch = err.Code, 0
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if err, msg := validateShareHeartbeat(req); err != nil {
		return fail(err, msg)
	}
	l, err := c.acquire(ctx, req.GroupID)
	if err != nil {
		return fail(err, "")
	}
	defer c.release(l)
	op, err, msg := c.newShareOp(req.GroupID, req.MemberEpoch == 0)
	if err != nil {
		return fail(err, msg)
	}
	m, send, err := op.heartbeat(req, clientID, clientHost)
	if err != nil {
		return fail(err, "")
	}
	if recs := op.records(); len(recs) > 0 {
		if err := c.append(ctx, recs); err != nil {
			return fail(err, "")
		}
	}
	c.afterShareHeartbeat(req.GroupID, l, op, m)
	resp.MemberID = &req.MemberID
	resp.MemberEpoch = req.MemberEpoch
	if m != nil {
		resp.MemberEpoch = m.Epoch
		if send {
			resp.Assignment = shareHeartbeatAssignment(m.Assigned)
		}
	}
	return resp
}

// validateShareHeartbeat is Kafka's check of a heartbeat's fields
// (throwIfShareGroupHeartbeatRequestIsInvalid), with our bounds.
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) (*kerr.Error, string) {
	switch {
	case req.GroupID == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case len(req.GroupID) > MaxGroupIDBytes:
		return kerr.InvalidGroupID, "GroupId is too long."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest, "RackId can't be empty."
	case req.MemberID == "":
		return kerr.InvalidRequest, "MemberId can't be empty."
	case len(req.MemberID) > maxShareMemberIDBytes:
		return kerr.InvalidRequest, "MemberId can't be longer than 36 characters."
	case len(deref(req.RackID)) > maxConsumerIDBytes:
		return kerr.InvalidRequest, "RackId is too long."
	case req.MemberEpoch < -1:
		return kerr.InvalidRequest, "MemberEpoch is invalid."
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return kerr.InvalidRequest, "SubscribedTopicNames must be set in first request."
	case len(req.SubscribedTopicNames) > maxSubscribedTopics:
		return kerr.InvalidRequest, "too many subscribed topics"
	}
	return nil, ""
}

func shareHeartbeatAssignment(a Assignment) *kmsg.ShareGroupHeartbeatResponseAssignment {
	out := kmsg.NewShareGroupHeartbeatResponseAssignment()
	out.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, id := range a.sortedIDs() {
		t := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		t.TopicID, t.Partitions = id, append([]int32{}, a[id]...)
		out.TopicPartitions = append(out.TopicPartitions, t)
	}
	return &out
}

// afterShareHeartbeat renews the session of the member a heartbeat came
// from and stops the timers of members removed, once the op's records
// are committed.
func (c *Coordinator) afterShareHeartbeat(group string, l *cgLive, op *shareOp, m *ShareMember) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	for _, id := range op.gone {
		c.dropLiveMember(l, id)
	}
	if m != nil {
		c.armShareMember(group, l, m.ID, true)
	}
}

// armShareMember renews (or, on load, starts) a share member's session.
// Call with mu held.
func (c *Coordinator) armShareMember(group string, l *cgLive, id string, renew bool) {
	lm := l.members[id]
	if lm == nil {
		lm = &cgLiveMember{}
		l.members[id] = lm
	}
	if renew || lm.session == nil {
		d := c.cfg.Share.SessionTimeout
		lm.sessionEnd = time.Now().Add(d)
		c.startTimer(&lm.session, d, func() { c.startShareFence(group, id) })
	}
}

// startShareFence runs shareFence in a goroutine of the coordinator. Call
// with mu held (timer callbacks are).
func (c *Coordinator) startShareFence(group, member string) {
	if c.closed {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.shareFence(group, member)
	}()
}

// shareFence removes a share member whose session ended on this leader's
// clock, unless it heartbeated meanwhile; a failed write is tried again.
func (c *Coordinator) shareFence(group, member string) {
	l, aerr := c.acquire(c.ctx, group)
	if aerr != nil {
		return
	}
	defer c.release(l)
	c.mu.Lock()
	lm := l.members[member]
	due := lm != nil && !time.Now().Before(lm.sessionEnd)
	c.mu.Unlock()
	if !due {
		return
	}
	g, ok := c.view.ShareGroup(group)
	if !ok || g.Members[member] == nil {
		c.mu.Lock()
		c.dropLiveMember(l, member)
		c.mu.Unlock()
		return
	}
	op := &shareOp{c: c, id: group, g: g, topics: newTopicCache(c.cfg.Topics)}
	op.remove(member)
	op.finish()
	err := c.append(c.ctx, op.records())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if err == nil {
		c.logger.Info("groupcoord: share group member's session expired", "group", group, "member", member)
		c.dropLiveMember(l, member)
		return
	}
	if lm := l.members[member]; lm != nil {
		c.startTimer(&lm.session, retryFence, func() { c.startShareFence(group, member) })
	}
}

// loadShareGroups starts the session of every share group member the
// View holds, from now. Call with mu held, from New.
func (c *Coordinator) loadShareGroups() {
	for _, id := range c.view.Groups() {
		g, ok := c.view.ShareGroup(id)
		if !ok {
			continue
		}
		l := c.consumerGroup(id)
		for mid := range g.Members {
			c.armShareMember(id, l, mid, false)
		}
	}
}
