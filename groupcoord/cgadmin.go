package groupcoord

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerGroupType is the group type ListGroups v5 reports for KIP-848
// consumer groups.
const consumerGroupType = "consumer"

// consumerState is a consumer group's state, as Kafka names it.
func consumerState(g *ConsumerGroup) string {
	if len(g.Members) == 0 {
		return "Empty"
	}
	if g.TargetEpoch != g.Epoch {
		return "Assigning"
	}
	for _, m := range g.Members {
		if m.Epoch != -2 && (m.Epoch != g.TargetEpoch || m.State != memberStable) {
			return "Reconciling"
		}
	}
	return "Stable"
}

// DescribeConsumerGroup answers one group of a ConsumerGroupDescribe:
// GROUP_ID_NOT_FOUND unless group is a consumer group.
func (c *Coordinator) DescribeConsumerGroup(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	out := kmsg.NewConsumerGroupDescribeResponseGroup()
	out.Group = group
	if c.isClosed() {
		out.ErrorCode = kerr.NotCoordinator.Code
		return out
	}
	g, ok := c.view.ConsumerGroup(group)
	if !ok {
		msg := "Group " + group + " not found."
		if c.view.HasGroup(group) {
			msg = "Group " + group + " is not a consumer group."
		}
		out.ErrorCode, out.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		return out
	}
	op := c.opOn(group, g)
	out.State, out.Epoch, out.AssignmentEpoch = consumerState(g), g.Epoch, g.TargetEpoch
	out.AssignorName = op.groupAssignor()
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		m := g.Members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = id, m.InstanceID, m.RackID, m.Epoch
		dm.ClientID, dm.ClientHost = m.ClientID, m.ClientHost
		dm.SubscribedTopics = append([]string{}, m.Topics...)
		dm.SubscribedTopicRegex = m.Regex
		dm.Assignment = describeAssignment(m.Assigned, op.topics)
		dm.TargetAssignment = describeAssignment(m.Target, op.topics)
		dm.MemberType = 1 // a consumer protocol member
		if m.Classic != nil {
			dm.MemberType = 0
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

func describeAssignment(a Assignment, topics topicCache) kmsg.Assignment {
	out := kmsg.NewAssignment()
	for _, id := range a.sortedIDs() {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = id, topics.name(id), append([]int32{}, a[id]...)
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}

func (c *Coordinator) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// listConsumerGroups lists the consumer groups whose state passes keep.
func (c *Coordinator) listConsumerGroups(keep func(state string) bool) []kmsg.ListGroupsResponseGroup {
	var out []kmsg.ListGroupsResponseGroup
	for _, id := range c.view.Groups() {
		g, ok := c.view.ConsumerGroup(id)
		if !ok || !keep(consumerState(g)) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType = id, consumerProtocolType
		lg.GroupState, lg.GroupType = consumerState(g), consumerGroupType
		out = append(out, lg)
	}
	return out
}

// deleteConsumerGroup deletes an empty consumer group and its offsets
// (Kafka's DeleteGroups on a consumer group): NON_EMPTY_GROUP while it
// has members.
func (c *Coordinator) deleteConsumerGroup(ctx context.Context, group string) *kerr.Error {
	l, err := c.acquire(ctx, group)
	if err != nil {
		return err
	}
	defer c.release(l)
	g, ok := c.view.ConsumerGroup(group)
	switch {
	case !ok:
		return kerr.GroupIDNotFound
	case len(g.Members) > 0:
		return kerr.NonEmptyGroup
	}
	var recs []Record
	for _, po := range c.view.Offsets(group) {
		recs = append(recs, OffsetTombstone(group, po.Topic, po.Partition))
	}
	recs = append(recs, consumerGroupTombstones(group)...)
	if err := c.append(ctx, recs); err != nil {
		return err
	}
	c.logger.Info("groupcoord: consumer group deleted", "group", group)
	return nil
}

// consumerMember reads a member's epoch from the View: isCG is false if
// group is not a consumer group; ok false if the member is unknown.
func (v *View) consumerMember(group, member string) (epoch int32, members int, ok, isCG bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	vg := v.groups[group]
	if vg == nil || vg.cg == nil {
		return 0, 0, false, false
	}
	m := vg.cg.Members[member]
	if m == nil {
		return 0, len(vg.cg.Members), false, true
	}
	return m.Epoch, len(vg.cg.Members), true, true
}

// validateConsumerCommit is Kafka's check of an offset commit against a
// consumer group (ConsumerGroup.validateOffsetCommit): a commit without
// a member epoch is allowed while the group is empty; else the member
// must exist and commit in its current epoch.
func (c *Coordinator) validateConsumerCommit(group string, epoch int32, memberID string) (*kerr.Error, bool) {
	cur, n, ok, isCG := c.view.consumerMember(group, memberID)
	switch {
	case !isCG:
		return nil, false
	case epoch < 0 && n == 0:
		return nil, true
	case !ok:
		return kerr.UnknownMemberID, true
	case epoch != cur:
		return kerr.StaleMemberEpoch, true
	}
	return nil, true
}

// ValidateOffsetFetch is Kafka's check of an OffsetFetch v9+ that names a
// member (memberID non-nil or memberEpoch ≥ 0) against a consumer group:
// the member must exist (UNKNOWN_MEMBER_ID) in that epoch
// (STALE_MEMBER_EPOCH). Classic groups check nothing.
func (c *Coordinator) ValidateOffsetFetch(group string, memberID *string, memberEpoch int32) *kerr.Error {
	if memberID == nil && memberEpoch < 0 {
		return nil
	}
	cur, _, ok, isCG := c.view.consumerMember(group, deref(memberID))
	switch {
	case !isCG:
		return nil
	case !ok:
		return kerr.UnknownMemberID
	case cur != memberEpoch:
		return kerr.StaleMemberEpoch
	}
	return nil
}
