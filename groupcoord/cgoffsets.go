package groupcoord

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Offsets of KIP-848 consumer groups: commits, deletions and expiry.

// consumerCommitVersion refuses an OffsetCommit below v9 from a KIP-848
// member of a consumer group, which must commit with its member epoch
// (Kafka's UNSUPPORTED_VERSION); classic members commit with theirs as the
// generation.
func (c *Coordinator) consumerCommitVersion(req *kmsg.OffsetCommitRequest) *kerr.Error {
	if req.Version >= 9 {
		return nil
	}
	if m, ok := c.view.consumerMemberCopy(req.Group, req.MemberID); ok && m.Classic == nil {
		return kerr.UnsupportedVersion
	}
	return nil
}

// subscribedSet is the set of topics the members of g subscribe to.
func (c *Coordinator) subscribedSet(id string, g *ConsumerGroup) map[string]bool {
	set := make(map[string]bool)
	if len(g.Members) == 0 {
		return set
	}
	for _, t := range c.opOn(id, g).subscribedTopics() {
		set[t] = true
	}
	return set
}

// consumerOffsetDeleteChecks are OffsetDelete's per-partition errors for
// a consumer group: GROUP_SUBSCRIBED_TO_TOPIC for the topics its members
// subscribe to.
func (c *Coordinator) consumerOffsetDeleteChecks(req *kmsg.OffsetDeleteRequest) [][]*kerr.Error {
	g, _ := c.view.ConsumerGroup(req.Group)
	subscribed := map[string]bool{}
	if g != nil {
		subscribed = c.subscribedSet(req.Group, g)
	}
	errs := make([][]*kerr.Error, len(req.Topics))
	for i, t := range req.Topics {
		errs[i] = make([]*kerr.Error, len(t.Partitions))
		for j, p := range t.Partitions {
			switch {
			case !c.cfg.TopicExists(t.Topic, p.Partition):
				errs[i][j] = kerr.UnknownTopicOrPartition
			case subscribed[t.Topic]:
				errs[i][j] = kerr.GroupSubscribedToTopic
			}
		}
	}
	return errs
}

// expireConsumerGroup starts the offset expiry of a consumer group: the
// offsets of topics no member subscribes to expire the retention after
// their commit; an empty group left without offsets is deleted. Call with
// mu held.
func (c *Coordinator) expireConsumerGroup(id string, g *ConsumerGroup, now time.Time, retention time.Duration) chan groupExpiry {
	l := c.consumerGroup(id)
	if l.expiring != nil || c.committing[id] > 0 {
		return nil
	}
	cutoff := now.Add(-retention).UnixMilli()
	subscribed := c.subscribedSet(id, g)
	inTxn := c.view.pendingPartitions(id)
	var recs []Record
	kept := 0
	for _, po := range c.view.Offsets(id) {
		if subscribed[po.Topic] || po.CommitTimestamp > cutoff || inTxn[topicPartition{po.Topic, po.Partition}] {
			kept++
			continue
		}
		recs = append(recs, OffsetTombstone(id, po.Topic, po.Partition))
	}
	offsets := len(recs)
	remove := len(g.Members) == 0 && kept == 0 && len(inTxn) == 0
	if remove {
		recs = append(recs, consumerGroupTombstones(id)...)
	}
	if len(recs) == 0 {
		return nil
	}
	l.expiring = make(chan struct{})
	done := make(chan groupExpiry, 1)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := c.writeConsumerExpiry(id, recs, offsets, &remove)
		c.mu.Lock()
		close(l.expiring)
		l.expiring = nil
		c.mu.Unlock()
		done <- groupExpiry{offsets: offsets, removed: remove && err == nil, err: err}
	}()
	return done
}

// writeConsumerExpiry writes an expiry in the group's turn; the group is
// not deleted if a member joined meanwhile.
func (c *Coordinator) writeConsumerExpiry(id string, recs []Record, offsets int, remove *bool) *kerr.Error {
	l, err := c.acquire(c.ctx, id)
	if err != nil {
		return err
	}
	defer c.release(l)
	if g, ok := c.view.ConsumerGroup(id); *remove && (!ok || len(g.Members) > 0) {
		*remove = false
		recs = recs[:offsets]
	}
	if len(recs) == 0 {
		return nil
	}
	return c.append(c.ctx, recs)
}

// relaxStaleCommit applies KIP-1251 to an OffsetCommit v9+ of a consumer
// group member in an epoch older than its current one: the partitions it
// was given at or before that epoch, and still holds, may commit (it
// returns the member's current epoch to validate the commit with); the
// others get STALE_MEMBER_EPOCH in errs. Any other commit is left as it
// is, with generation.
func (c *Coordinator) relaxStaleCommit(req *kmsg.OffsetCommitRequest, generation int32, errs [][]*kerr.Error) int32 {
	if req.Version < 9 || req.MemberID == "" || generation < 0 {
		return generation
	}
	m, ok := c.view.consumerMemberCopy(req.Group, req.MemberID)
	if !ok || generation >= m.Epoch {
		return generation
	}
	topics := newTopicCache(c.cfg.Topics)
	for i, t := range req.Topics {
		ti, known := topics.get(t.Topic)
		id := ti.ID
		for j, p := range t.Partitions {
			if errs[i][j] != nil {
				continue
			}
			if !known || !slices.Contains(m.Assigned[id], p.Partition) || m.assignedEpoch(id, p.Partition) > generation {
				errs[i][j] = kerr.StaleMemberEpoch
			}
		}
	}
	return m.Epoch
}

// consumerMemberCopy returns a copy of a consumer group member.
func (v *View) consumerMemberCopy(group, member string) (*ConsumerMember, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	vg := v.groups[group]
	if vg == nil || vg.cg == nil || vg.cg.Members[member] == nil {
		return nil, false
	}
	return vg.cg.Members[member].clone(), true
}
