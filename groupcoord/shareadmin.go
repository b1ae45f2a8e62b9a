package groupcoord

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareGroupType is the group type (and protocol type) ListGroups
// reports for share groups.
const shareGroupType = "share"

// shareState is a share group's state, as Kafka names it.
func shareState(g *ShareGroup) string {
	if len(g.Members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// DescribeShareGroup answers one group of a ShareGroupDescribe:
// GROUP_ID_NOT_FOUND unless group is a share group. Members come sorted
// by id, with their current assignments.
func (c *Coordinator) DescribeShareGroup(group string) kmsg.ShareGroupDescribeResponseGroup {
	out := kmsg.NewShareGroupDescribeResponseGroup()
	out.GroupID = group
	if c.isClosed() {
		out.ErrorCode = kerr.NotCoordinator.Code
		return out
	}
	g, ok := c.view.ShareGroup(group)
	if !ok {
		msg := "Group " + group + " not found."
		if c.view.HasGroup(group) {
			msg = "Group " + group + " is not a share group."
		}
		out.ErrorCode, out.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		return out
	}
	topics := newTopicCache(c.cfg.Topics)
	out.GroupState, out.GroupEpoch, out.AssignmentEpoch = shareState(g), g.Epoch, g.TargetEpoch
	out.Assignor = AssignorSimple
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		m := g.Members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.RackID, dm.MemberEpoch = id, m.RackID, m.Epoch
		dm.ClientID, dm.ClientHost = m.ClientID, m.ClientHost
		dm.SubscribedTopicNames = append([]string{}, m.Topics...)
		for _, tid := range m.Assigned.sortedIDs() {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = tid, topics.name(tid), append([]int32{}, m.Assigned[tid]...)
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// listShareGroups lists the share groups whose state passes keep.
func (c *Coordinator) listShareGroups(keep func(state string) bool) []kmsg.ListGroupsResponseGroup {
	var out []kmsg.ListGroupsResponseGroup
	for _, id := range c.view.Groups() {
		g, ok := c.view.ShareGroup(id)
		if !ok || !keep(shareState(g)) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType = id, shareGroupType
		lg.GroupState, lg.GroupType = shareState(g), shareGroupType
		out = append(out, lg)
	}
	return out
}

// deleteShareGroup deletes an empty share group (Kafka's DeleteGroups on
// a share group): NON_EMPTY_GROUP while it has members.
func (c *Coordinator) deleteShareGroup(ctx context.Context, group string) *kerr.Error {
	l, err := c.acquire(ctx, group)
	if err != nil {
		return err
	}
	defer c.release(l)
	g, ok := c.view.ShareGroup(group)
	switch {
	case !ok:
		return kerr.GroupIDNotFound
	case len(g.Members) > 0:
		return kerr.NonEmptyGroup
	}
	if err := c.append(ctx, shareGroupTombstones(group)); err != nil {
		return err
	}
	c.logger.Info("groupcoord: share group deleted", "group", group)
	return nil
}

// ShareGroup returns a copy of a KIP-932 share group's state.
func (v *View) ShareGroup(group string) (*ShareGroup, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	vg := v.groups[group]
	if vg == nil || vg.sg == nil {
		return nil, false
	}
	return vg.sg.clone(), true
}

// ShareMember returns the member epoch of a share group's member, for a
// ShareFetch or ShareAcknowledge to check that it comes from a member;
// ok is false if group is not a share group or has no such member.
func (v *View) ShareMember(group, memberID string) (epoch int32, ok bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	vg := v.groups[group]
	if vg == nil || vg.sg == nil {
		return 0, false
	}
	m := vg.sg.Members[memberID]
	if m == nil {
		return 0, false
	}
	return m.Epoch, true
}

// ShareMember is View.ShareMember on the coordinator's view.
func (c *Coordinator) ShareMember(group, memberID string) (epoch int32, ok bool) {
	return c.view.ShareMember(group, memberID)
}

// Group types GroupType reports, as ListGroups v5 names them.
const (
	GroupTypeClassic  = classicGroupType
	GroupTypeConsumer = consumerGroupType
	GroupTypeShare    = shareGroupType
)

// GroupType reports what kind of group id is in the view: GroupTypeShare,
// GroupTypeConsumer, GroupTypeClassic (stored metadata or committed
// offsets only), or "" if the view holds nothing of it. A share API on an
// id of another type answers GROUP_ID_NOT_FOUND, as Kafka does.
func (v *View) GroupType(group string) string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	switch vg := v.groups[group]; {
	case vg == nil:
		return ""
	case vg.sg != nil:
		return GroupTypeShare
	case vg.cg != nil:
		return GroupTypeConsumer
	}
	return GroupTypeClassic
}

// isShareGroup reports whether group is a KIP-932 share group.
func (v *View) isShareGroup(group string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	vg := v.groups[group]
	return vg != nil && vg.sg != nil
}

// isModernGroup reports whether group is a consumer or a share group,
// which the classic group APIs do not serve.
func (v *View) isModernGroup(group string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	vg := v.groups[group]
	return vg != nil && (vg.cg != nil || vg.sg != nil)
}
