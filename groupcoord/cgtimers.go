package groupcoord

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Consumer group timers, on the leader's clock: a member's session ends
// group.consumer.session.timeout.ms after its last heartbeat, and a member
// that has not revoked the partitions it was asked to within its
// rebalance timeout is fenced. Either removes the member through the Log.

// retryFence is how soon a fencing whose write failed is tried again.
const retryFence = time.Second

// afterHeartbeat starts, renews and stops the timers of the members an
// op touched, once its records are committed.
func (c *Coordinator) afterHeartbeat(group string, l *cgLive, op *consumerOp, m *ConsumerMember) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if op.converted {
		if g := c.groups[group]; g != nil && len(g.members) == 0 {
			c.unload(g)
			delete(c.groups, group)
		}
	}
	for _, id := range op.gone {
		c.dropLiveMember(l, id)
	}
	if op.staticLeft != "" {
		if lm := l.members[op.staticLeft]; lm != nil {
			c.stopTimer(&lm.revoke)
		}
	}
	if m != nil {
		c.armMember(group, l, m, true)
	}
}

// armMember renews (or, on load, starts) a member's session and starts or
// stops its revocation deadline. Call with mu held.
func (c *Coordinator) armMember(group string, l *cgLive, m *ConsumerMember, renew bool) {
	lm := l.members[m.ID]
	if lm == nil {
		lm = &cgLiveMember{}
		l.members[m.ID] = lm
	}
	id := m.ID
	if renew || lm.session == nil {
		lm.sessionEnd = time.Now().Add(c.cfg.Consumer.SessionTimeout)
		c.startTimer(&lm.session, c.cfg.Consumer.SessionTimeout, func() { c.startFence(group, id, false) })
	}
	if m.State != memberUnrevokedPartitions {
		c.stopTimer(&lm.revoke)
		lm.revokeEnd = time.Time{}
		return
	}
	if lm.revoke != nil && lm.revokeEpoch == m.Epoch {
		return // already timing this revocation
	}
	d := time.Duration(max(m.RebalanceTimeout, 0)) * time.Millisecond
	lm.revokeEpoch, lm.revokeEnd = m.Epoch, time.Now().Add(d)
	c.startTimer(&lm.revoke, d, func() { c.startFence(group, id, true) })
}

// dropLiveMember stops a member's timers and forgets them. Call with mu
// held.
func (c *Coordinator) dropLiveMember(l *cgLive, id string) {
	if lm := l.members[id]; lm != nil {
		c.stopTimer(&lm.session)
		c.stopTimer(&lm.revoke)
		delete(l.members, id)
	}
}

// startFence runs fence in a goroutine of the coordinator. Call with mu
// held (timer callbacks are).
func (c *Coordinator) startFence(group, member string, revocation bool) {
	if c.closed {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.fence(group, member, revocation)
	}()
}

// fence removes a member whose session expired, or that did not revoke
// in time, unless it heartbeated (or revoked) meanwhile.
func (c *Coordinator) fence(group, member string, revocation bool) {
	l, aerr := c.acquire(c.ctx, group)
	if aerr != nil {
		return
	}
	defer l.release()
	c.mu.Lock()
	lm := l.members[member]
	now := time.Now()
	due := lm != nil && ((!revocation && !now.Before(lm.sessionEnd)) ||
		(revocation && !lm.revokeEnd.IsZero() && !now.Before(lm.revokeEnd)))
	var epoch int32
	if lm != nil {
		epoch = lm.revokeEpoch
	}
	c.mu.Unlock()
	if !due {
		return
	}
	g, ok := c.view.ConsumerGroup(group)
	var m *ConsumerMember
	if ok {
		m = g.Members[member]
	}
	if m == nil || (revocation && (m.State != memberUnrevokedPartitions || m.Epoch != epoch)) {
		if m == nil {
			c.mu.Lock()
			c.dropLiveMember(l, member)
			c.mu.Unlock()
		}
		return
	}
	op := c.opOn(group, g)
	op.remove(member)
	op.finish()
	err := c.append(c.ctx, op.records())
	c.fenced(group, l, member, revocation, err)
}

// fenced ends a fencing: the member's timers stop, or, if the write
// failed, the fencing is tried again soon.
func (c *Coordinator) fenced(group string, l *cgLive, member string, revocation bool, err *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if err == nil {
		c.logger.Info("groupcoord: consumer group member fenced", "group", group, "member", member, "revocation_timeout", revocation)
		c.dropLiveMember(l, member)
		return
	}
	lm := l.members[member]
	if lm == nil {
		return
	}
	slot := &lm.session
	if revocation {
		slot = &lm.revoke
	}
	c.startTimer(slot, retryFence, func() { c.startFence(group, member, revocation) })
}

// loadConsumerGroups starts the timers of every consumer group member the
// View holds: sessions from now, revocations a rebalance timeout from
// now. Call with mu held, from New.
func (c *Coordinator) loadConsumerGroups() {
	for _, id := range c.view.Groups() {
		g, ok := c.view.ConsumerGroup(id)
		if !ok {
			continue
		}
		l := c.consumerGroup(id)
		for _, m := range g.Members {
			c.armMember(id, l, m, false)
		}
	}
}

// closeConsumerGroups stops every consumer group timer. Call with mu held.
func (c *Coordinator) closeConsumerGroups() {
	for _, l := range c.cgroups {
		for _, lm := range l.members {
			c.stopTimer(&lm.session)
			c.stopTimer(&lm.revoke)
		}
	}
}
