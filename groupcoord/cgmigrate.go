package groupcoord

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Online migration (group.consumer.migration.policy), as Kafka 4.0 does
// it. Upgrade: a KIP-848 member joining a classic consumer group with
// members turns it into a consumer group whose classic members keep
// their generation as member epoch and their assignment; they rejoin
// through JoinGroup as the new epoch asks. Downgrade: when the last
// KIP-848 member leaves (or is fenced) and classic members remain, the
// group becomes a classic group again, stored as one generation of them
// and rebalancing at once.

func (c *Coordinator) upgradeAllowed() bool {
	p := c.cfg.Consumer.MigrationPolicy
	return p == MigrationBidirectional || p == MigrationUpgrade
}

func (c *Coordinator) downgradeAllowed() bool {
	p := c.cfg.Consumer.MigrationPolicy
	return p == MigrationBidirectional || p == MigrationDowngrade
}

// upgrade builds the consumer group that replaces the classic group g and
// the records that store it (the classic group's tombstone first), or
// fails GROUP_ID_NOT_FOUND as Kafka does when the group may not be
// upgraded. It changes nothing: retireClassic does, once the heartbeat
// that upgrades is valid. Call with mu held.
func (c *Coordinator) upgrade(g *group) (*ConsumerGroup, []Record, *kerr.Error) {
	if !c.upgradeAllowed() || g.protocolType != consumerProtocolType || g.state == stateDead ||
		len(g.members) > c.cfg.Consumer.MaxSize {
		return nil, nil, kerr.GroupIDNotFound
	}
	topics := newTopicCache(c.cfg.Topics)
	cg := &ConsumerGroup{Epoch: g.generation, TargetEpoch: g.generation, Members: make(map[string]*ConsumerMember)}
	for _, id := range g.memberIDs() {
		cg.Members[id] = upgradedMember(g, g.members[id], topics)
	}
	recs := []Record{GroupTombstone(g.id), ConsumerGroupRecord(g.id, cg.Epoch, 0), TargetEpochRecord(g.id, cg.TargetEpoch)}
	for _, id := range slices.Sorted(maps.Keys(cg.Members)) {
		m := cg.Members[id]
		recs = append(recs, ConsumerMemberRecord(g.id, m), TargetMemberRecord(g.id, id, m.Target), CurrentAssignmentRecord(g.id, m))
	}
	return cg, recs, nil
}

// retireClassic ends the classic group an upgrade replaces, before its
// records are written: its waiting requests are answered
// REBALANCE_IN_PROGRESS and its timers stop. If the write then fails,
// the next request loads the classic group from the View again. It fails
// COORDINATOR_NOT_AVAILABLE (retried) if the group moved meanwhile.
func (c *Coordinator) retireClassic(g *group, generation int32) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kerr.NotCoordinator
	}
	if c.groups[g.id] != g || g.generation != generation || g.state == stateDead {
		return kerr.CoordinatorNotAvailable
	}
	for _, m := range g.members {
		g.answerJoin(m, joinError(m.id, kerr.RebalanceInProgress))
		g.answerSync(m, syncResult{err: kerr.RebalanceInProgress})
	}
	c.unload(g)
	g.setState(stateDead, time.Now())
	delete(c.groups, g.id)
	c.logger.Info("groupcoord: classic group upgraded to a consumer group", "group", g.id, "members", len(g.members))
	return nil
}

// upgradedMember is a classic member as a member of the consumer group:
// its subscription and assignment read from the consumer protocol, its
// generation as its epoch.
func upgradedMember(g *group, m *member, topics topicCache) *ConsumerMember {
	cm := &ConsumerMember{
		ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
		RebalanceTimeout: int32(m.rebalanceTimeout / time.Millisecond),
		Epoch:            g.generation, PrevEpoch: g.generation - 1, State: memberStable,
		Assigned: Assignment{}, Target: Assignment{},
		Classic: &ClassicMember{SessionTimeout: int32(m.sessionTimeout / time.Millisecond)},
		hasMeta: true, hasTarget: true, hasCurrent: true,
	}
	for _, p := range m.protocols {
		cm.Classic.Protocols = append(cm.Classic.Protocols, ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
	}
	var sub kmsg.ConsumerMemberMetadata
	if sub.ReadFrom(m.metadataFor(g.protocol)) == nil {
		cm.Topics = slices.Compact(slices.Sorted(slices.Values(sub.Topics)))
		cm.RackID = sub.Rack
	}
	if cm.Topics == nil {
		cm.Topics = []string{}
	}
	var a kmsg.ConsumerMemberAssignment
	if a.ReadFrom(m.assignment) == nil {
		for _, t := range a.Topics {
			if ti, ok := topics.get(t.Topic); ok {
				ps := append(cm.Assigned[ti.ID], t.Partitions...)
				slices.Sort(ps)
				cm.Assigned[ti.ID] = slices.Compact(ps)
			}
		}
	}
	cm.Target = cm.Assigned.clone()
	return cm
}

// maybeDowngrade turns the op's group back into a classic group when only
// classic members remain after a KIP-848 member left: the op's records
// become the consumer group's tombstones and the classic group's record,
// and the returned metadata is the generation to load once written (nil:
// no downgrade).
func (op *consumerOp) maybeDowngrade() *GroupMetadata {
	g, c := op.g, op.c
	if len(g.Members) == 0 || !c.downgradeAllowed() || len(g.Members) > c.cfg.MaxGroupSize {
		return nil
	}
	ids := slices.Sorted(maps.Keys(g.Members))
	for _, id := range ids {
		if g.Members[id].Classic == nil || len(g.Members[id].Classic.Protocols) == 0 {
			return nil
		}
	}
	protocol := commonProtocol(g, ids)
	if protocol == "" {
		return nil
	}
	md := &GroupMetadata{ProtocolType: consumerProtocolType, Generation: g.Epoch, Protocol: protocol, Leader: ids[0], StateTimestamp: time.Now().UnixMilli()}
	for _, id := range ids {
		m := g.Members[id]
		var sub []byte
		for _, p := range m.Classic.Protocols {
			if p.Name == protocol {
				sub = p.Metadata
			}
		}
		md.Members = append(md.Members, Member{
			ID: id, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			RebalanceTimeout: m.RebalanceTimeout, SessionTimeout: m.Classic.SessionTimeout,
			Subscription: sub, Assignment: c.classicAssignment(m),
		})
		op.pre = append(op.pre, consumerMemberTombstones(op.id, id)...)
		op.gone = append(op.gone, id)
	}
	op.pre = append(op.pre, consumerGroupTombstones(op.id)...)
	op.recs = []Record{GroupRecord(op.id, md)}
	return md
}

// commonProtocol is the first protocol of the first member that every
// member supports; "" if none.
func commonProtocol(g *ConsumerGroup, ids []string) string {
	for _, p := range g.Members[ids[0]].Classic.Protocols {
		all := true
		for _, id := range ids[1:] {
			all = all && slices.ContainsFunc(g.Members[id].Classic.Protocols, func(q ClassicProtocol) bool { return q.Name == p.Name })
		}
		if all {
			return p.Name
		}
	}
	return ""
}

// loadDowngraded installs the classic group a downgrade wrote and starts
// its rebalance. Call with mu held.
func (c *Coordinator) loadDowngraded(id string, md *GroupMetadata) {
	if c.closed {
		return
	}
	g := loadGroup(id, *md, time.Now())
	c.groups[id] = g
	for _, m := range g.members {
		c.scheduleHeartbeat(g, m, m.sessionTimeout)
	}
	c.prepareRebalance(g, "downgraded from a consumer group")
	c.logger.Info("groupcoord: consumer group downgraded to a classic group", "group", id, "members", len(g.members))
}
