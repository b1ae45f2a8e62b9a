package groupcoord

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicGroupType is the group type ListGroups v5 reports for classic
// groups.
const classicGroupType = "classic"

// DescribeGroup answers one group of a DescribeGroups as v6 does: its
// state, protocol and members, with their subscriptions and assignments
// only while the group is stable (as Kafka). Like Kafka 4.x's
// GroupMetadataManager.describeGroups, it describes classic groups only: a
// consumer group (even one that still has classic members, mid online
// migration), a share group or an unknown group is Dead with
// GROUP_ID_NOT_FOUND and a message. Below v6 Kafka drops that error and
// answers the bare Dead group; the caller, which knows the version, does.
func (c *Coordinator) DescribeGroup(group string) kmsg.DescribeGroupsResponseGroup {
	out := kmsg.NewDescribeGroupsResponseGroup()
	out.Group = group
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		out.ErrorCode = kerr.NotCoordinator.Code
		return out
	}
	if c.view.isModernGroup(group) { // Kafka 4.x: DescribeGroups describes classic groups
		msg := "Group " + group + " is not a classic group."
		out.ErrorCode, out.ErrorMessage, out.State = kerr.GroupIDNotFound.Code, &msg, stateDead.String()
		return out
	}
	g := c.lookup(group)
	if g == nil || g.state == stateDead {
		msg := "Group " + group + " not found."
		out.ErrorCode, out.ErrorMessage, out.State = kerr.GroupIDNotFound.Code, &msg, stateDead.String()
		return out
	}
	out.State = g.state.String()
	out.ProtocolType = g.protocolType
	stable := g.state == stateStable
	if stable {
		out.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID = m.id, m.instanceID
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
		if stable {
			dm.ProtocolMetadata = nonNil(m.metadataFor(g.protocol))
			dm.MemberAssignment = nonNil(m.assignment)
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// ListGroups lists the coordinator's groups, sorted by id, keeping those
// whose state is one of statesFilter (ListGroups v4) and whose type is one
// of typesFilter (v5: "classic", "consumer" or "share"); both compare
// without case, and an empty filter keeps everything. It returns nil once
// the coordinator is closed.
func (c *Coordinator) ListGroups(statesFilter, typesFilter []string) []kmsg.ListGroupsResponseGroup {
	keep := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	var out []kmsg.ListGroupsResponseGroup
	if keep(typesFilter, consumerGroupType) {
		out = c.listConsumerGroups(func(state string) bool { return keep(statesFilter, state) })
	}
	if keep(typesFilter, shareGroupType) {
		out = append(out, c.listShareGroups(func(state string) bool { return keep(statesFilter, state) })...)
	}
	if !keep(typesFilter, classicGroupType) {
		return out
	}
	for _, id := range c.view.Groups() {
		if !c.view.isModernGroup(id) {
			c.lookup(id) // groups known only by their offsets are Empty groups
		}
	}
	for id, g := range c.groups {
		if g.state == stateDead || !keep(statesFilter, g.state.String()) || c.view.isModernGroup(id) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType = id, g.protocolType
		lg.GroupState, lg.GroupType = g.state.String(), classicGroupType
		out = append(out, lg)
	}
	slices.SortFunc(out, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// DeleteGroup deletes an empty group: it writes tombstones for its
// offsets and its metadata through the Log, after the group's earlier
// metadata writes, and returns once they are committed (nil), or the
// error: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, or the Log's, converted.
// While the deletion is written the group is Dead, and requests for it
// are answered COORDINATOR_NOT_AVAILABLE; if it fails, the group is
// empty again. A simple OffsetCommit accepted before the deletion began
// may commit after the tombstones (as in Kafka); its offsets then make a
// new empty group.
func (c *Coordinator) DeleteGroup(ctx context.Context, group string) *kerr.Error {
	if c.view.isConsumerGroup(group) {
		return c.deleteConsumerGroup(ctx, group)
	}
	if c.view.isShareGroup(group) {
		return c.deleteShareGroup(ctx, group)
	}
	done := make(chan *kerr.Error, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return kerr.NotCoordinator
	}
	g := c.lookup(group)
	switch {
	case g == nil || g.state == stateDead:
		c.mu.Unlock()
		return kerr.GroupIDNotFound
	case g.state != stateEmpty:
		c.mu.Unlock()
		return kerr.NonEmptyGroup
	}
	c.unload(g) // pending member ids and timers
	g.setState(stateDead, g.stateTime)
	var recs []Record
	for _, po := range c.view.Offsets(group) {
		recs = append(recs, OffsetTombstone(group, po.Topic, po.Partition))
	}
	recs = append(recs, GroupTombstone(group))
	c.write(g, recs, func(err *kerr.Error) {
		switch {
		case err != nil:
			// The group is empty as it was; whichever of its
			// tombstones committed, FetchOffsets reads the View.
			g.setState(stateEmpty, time.Now())
		case c.groups[group] == g:
			delete(c.groups, group)
		}
		done <- err
	})
	c.mu.Unlock()
	select {
	case err := <-done:
		if err == nil {
			c.logger.Info("groupcoord: group deleted", "group", group)
		}
		return err
	case <-c.ctx.Done(): // closed: the outcome is the next coordinator's to read
		return kerr.NotCoordinator
	case <-ctx.Done(): // the caller gave up; the outcome is unknown
		return kerr.CoordinatorNotAvailable
	}
}
