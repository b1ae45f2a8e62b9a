package groupcoord

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848 consumer groups. Their state is the View's: a request takes its
// group's turn (cgLive.sem), reads the group from the View, computes the
// records of what changes, writes them through the Log and answers once
// they are applied; the next request reads the result. Only the timers
// (sessions, revocation deadlines) live on the coordinator alone; a new
// coordinator starts them afresh for every member it loads, so members
// carry on across a failover without rejoining.

// Bounds on what a heartbeat may make the coordinator hold.
const (
	maxSubscribedTopics = 10000
	maxRegexBytes       = 1000
	maxConsumerIDBytes  = 1000 // member, instance and rack ids
)

// cgLive is a consumer group's coordinator-only state. Its fields are
// guarded by Coordinator.mu, except sem, a channel.
type cgLive struct {
	id      string
	sem     chan struct{} // holds one token while a request works on the group
	users   int           // requests that acquired or wait for sem
	members map[string]*cgLiveMember
	// expiring is closed when the group's offset expiry write in flight
	// ends; nil when none is. OffsetCommits wait for it.
	expiring chan struct{}
}

// cgLiveMember holds a member's timers.
type cgLiveMember struct {
	session, revoke       *time.Timer
	sessionEnd, revokeEnd time.Time
	revokeEpoch           int32 // the member epoch whose revocation revoke times
	// rejoinBy is when a classic member asked to rejoin must have (its
	// rebalance timeout, Kafka's join timeout): its session ends then at
	// the latest. Zero when it was not asked.
	rejoinBy time.Time
}

// consumerGroup returns a group's live state, creating it. Call with mu
// held.
func (c *Coordinator) consumerGroup(id string) *cgLive {
	l := c.cgroups[id]
	if l == nil {
		l = &cgLive{id: id, sem: make(chan struct{}, 1), members: make(map[string]*cgLiveMember)}
		c.cgroups[id] = l
	}
	return l
}

// acquire takes the group's turn, or fails with the client's error.
func (c *Coordinator) acquire(ctx context.Context, id string) (*cgLive, *kerr.Error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, kerr.NotCoordinator
	}
	l := c.consumerGroup(id)
	l.users++
	c.mu.Unlock()
	select {
	case l.sem <- struct{}{}:
		return l, nil
	case <-c.ctx.Done():
		c.forget(l)
		return nil, kerr.NotCoordinator
	case <-ctx.Done():
		c.forget(l)
		return nil, kerr.CoordinatorNotAvailable
	}
}

// release gives the group's turn back.
func (c *Coordinator) release(l *cgLive) {
	<-l.sem
	c.forget(l)
}

// forget ends a request's use of l, and drops l once no request uses it
// and it holds nothing (no consumer group by that id, no timers), so that
// requests for groups that never came to be leave nothing behind.
func (c *Coordinator) forget(l *cgLive) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l.users--
	if l.users == 0 && len(l.members) == 0 && l.expiring == nil && c.cgroups[l.id] == l && !c.view.isModernGroup(l.id) {
		delete(c.cgroups, l.id)
		c.keepRegexes(l.id, nil)
	}
}

// ConsumerGroupHeartbeat serves ConsumerGroupHeartbeat v0-1: a member
// joins (epoch 0), heartbeats, or leaves (-1, static -2); the answer
// carries its epoch and, when it changed or was asked for in full, its
// assignment. It returns once what changed is committed through the Log.
// canDescribe tells the topics the member may DESCRIBE, which its regex
// may subscribe to (nil: all).
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, clientID, clientHost string, canDescribe func(topic string) bool, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(c.cfg.Consumer.HeartbeatInterval.Milliseconds())
	fail := func(err *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode, resp.MemberEpoch = err.Code, 0
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if err, msg := c.validateHeartbeat(req); err != nil {
		return fail(err, msg)
	}
	memberID := req.MemberID
	if memberID == "" { // v0 lets the coordinator choose
		memberID = c.newConsumerMemberID()
	}
	l, err := c.acquire(ctx, req.Group)
	if err != nil {
		return fail(err, "")
	}
	defer c.release(l)
	op, err := c.newConsumerOp(req.Group)
	if err != nil {
		return fail(err, "")
	}
	op.self, op.canDescribe = memberID, canDescribe
	m, err := op.heartbeat(req, memberID, clientID, clientHost)
	if err == nil && op.upgradeFrom != nil {
		err = c.retireClassic(op.upgradeFrom, op.upgradeGen)
	}
	if err != nil {
		return fail(err, "")
	}
	if recs := op.records(); len(recs) > 0 {
		if err := c.append(ctx, recs); err != nil {
			return fail(err, "")
		}
	}
	c.keepRegexes(req.Group, op.resolved)
	c.afterHeartbeat(req.Group, l, op, m)
	resp.MemberID = &memberID
	resp.MemberEpoch = req.MemberEpoch
	if m != nil {
		resp.MemberEpoch = m.Epoch
		if op.sendAssignment {
			resp.Assignment = heartbeatAssignment(m.Assigned)
		}
	}
	return resp
}

// validateHeartbeat is Kafka's check of a heartbeat's fields
// (throwIfConsumerGroupHeartbeatRequestIsInvalid), with our bounds.
func (c *Coordinator) validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (*kerr.Error, string) {
	switch {
	case req.Group == "" || len(req.Group) > MaxGroupIDBytes:
		return kerr.InvalidGroupID, "GroupId can't be empty."
	case req.Version >= 1 && req.MemberID == "":
		return kerr.InvalidRequest, "MemberId can't be empty."
	case req.Version == 0 && req.MemberID == "" && req.MemberEpoch != 0:
		return kerr.UnknownMemberID, ""
	case len(req.MemberID) > maxConsumerIDBytes || len(deref(req.InstanceID)) > maxConsumerIDBytes || len(deref(req.RackID)) > maxConsumerIDBytes:
		return kerr.InvalidRequest, "an id is too long"
	case req.InstanceID != nil && *req.InstanceID == "":
		return kerr.InvalidRequest, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest, "RackId can't be empty."
	case req.MemberEpoch < -2:
		return kerr.InvalidRequest, "MemberEpoch is invalid."
	case req.MemberEpoch == -2 && req.InstanceID == nil:
		return kerr.InvalidRequest, "InstanceId can't be null when MemberEpoch is -2."
	case len(req.SubscribedTopicNames) > maxSubscribedTopics:
		return kerr.InvalidRequest, "too many subscribed topics"
	case req.SubscribedTopicRegex != nil && len(*req.SubscribedTopicRegex) > maxRegexBytes:
		return kerr.InvalidRegularExpression, "SubscribedTopicRegex is too long."
	case req.ServerAssignor != nil && !c.knownAssignor(*req.ServerAssignor):
		return kerr.UnsupportedAssignor, "ServerAssignor " + *req.ServerAssignor + " is not supported."
	}
	if req.MemberEpoch == 0 {
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		case req.Topics == nil || len(req.Topics) > 0:
			return kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileRegex(*req.SubscribedTopicRegex); err != nil {
			return kerr.InvalidRegularExpression, "SubscribedTopicRegex is not a valid regular expression."
		}
	}
	return nil, ""
}

func (c *Coordinator) knownAssignor(name string) bool {
	for _, a := range c.cfg.Consumer.Assignors {
		if a == name {
			return true
		}
	}
	return false
}

// newConsumerMemberID is a random member id, as Kafka's Uuid prints it.
func (c *Coordinator) newConsumerMemberID() string {
	var b [16]byte
	if _, err := io.ReadFull(c.cfg.Rand, b[:]); err != nil {
		_, _ = rand.Read(b[:])
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func heartbeatAssignment(a Assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, id := range a.sortedIDs() {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = id, append([]int32{}, a[id]...)
		out.Topics = append(out.Topics, t)
	}
	return &out
}

// requestOwned is the assignment a heartbeat says its member owns; nil
// if it did not say.
func requestOwned(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) Assignment {
	if topics == nil {
		return nil
	}
	a := make(Assignment, len(topics))
	for _, t := range topics {
		a[t.TopicID] = append(a[t.TopicID], t.Partitions...)
	}
	return a
}
