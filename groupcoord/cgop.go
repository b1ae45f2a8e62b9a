package groupcoord

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerOp is one request's (or timer's) change to a consumer group: a
// copy of the group from the View, changed in place, and the records
// that make the View follow.
type consumerOp struct {
	c         *Coordinator
	id        string
	g         *ConsumerGroup
	converted bool // an empty classic group becomes this consumer group
	bumped    bool // the group epoch was bumped
	pre       []Record
	recs      []Record
	// gone are members removed (left, fenced, replaced): their timers stop.
	gone []string
	// staticLeft is a static member that left with epoch -2.
	staticLeft string
	// upgradeFrom is the classic group this op upgrades, at generation
	// upgradeGen; downgradeTo is the classic generation a downgrade
	// writes (cgmigrate.go).
	upgradeFrom *group
	upgradeGen  int32
	downgradeTo *GroupMetadata

	sendAssignment bool
	topics         topicCache
	// resolved maps the group's regexes to the topics they subscribe
	// (regex.go); self is the member whose request this is, canDescribe
	// its topic DESCRIBE permission (nil: every topic).
	resolved    map[string][]string
	self        string
	canDescribe func(topic string) bool
}

// newConsumerOp starts an op on a consumer group, or on a new one: an
// empty classic group is converted (Kafka's offline migration, which
// every migration policy allows); a classic group with members is
// GROUP_ID_NOT_FOUND.
func (c *Coordinator) newConsumerOp(id string) (*consumerOp, *kerr.Error) {
	if c.view.isShareGroup(id) { // Kafka: "Group id is not a consumer group."
		return nil, kerr.GroupIDNotFound
	}
	if g, ok := c.view.ConsumerGroup(id); ok {
		return c.opOn(id, g), nil
	}
	c.mu.Lock()
	cg := c.groups[id]
	busy := cg != nil && (len(cg.members) > 0 || len(cg.pending) > 0 || cg.state == stateDead)
	if busy {
		defer c.mu.Unlock()
		g, recs, err := c.upgrade(cg)
		if err != nil {
			return nil, err
		}
		op := c.opOn(id, g)
		op.pre, op.upgradeFrom, op.upgradeGen, op.converted = recs, cg, cg.generation, true
		return op, nil
	}
	c.mu.Unlock()
	_, hasMeta := c.view.Group(id)
	var pre []Record
	if hasMeta {
		pre = append(pre, GroupTombstone(id))
	}
	op := c.opOn(id, &ConsumerGroup{Members: make(map[string]*ConsumerMember)})
	op.pre, op.converted = pre, hasMeta
	return op, nil
}

// opOn starts an op on g, a copy of a group.
func (c *Coordinator) opOn(id string, g *ConsumerGroup) *consumerOp {
	resolved := c.regexes(id)
	if resolved == nil {
		resolved = make(map[string][]string)
	}
	return &consumerOp{c: c, id: id, g: g, resolved: resolved, topics: newTopicCache(c.cfg.Topics)}
}

// records are the op's records, in the order they must be written.
func (op *consumerOp) records() []Record { return append(slices.Clip(op.pre), op.recs...) }

func (op *consumerOp) bump() {
	if !op.bumped {
		op.g.Epoch++
		op.bumped = true
	}
}

// heartbeat applies a heartbeat to the group and returns the member as
// it now is (nil if it left).
func (op *consumerOp) heartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, memberID, clientID, clientHost string) (*ConsumerMember, *kerr.Error) {
	var m *ConsumerMember
	var err *kerr.Error
	switch req.MemberEpoch {
	case -1, -2:
		if err := op.leave(req, memberID); err != nil {
			return nil, err
		}
		if len(op.gone) > 0 {
			op.downgradeTo = op.maybeDowngrade()
		}
		if op.downgradeTo == nil {
			op.finish()
		}
		return nil, nil
	case 0:
		m, err = op.join(req, memberID)
	default:
		m, err = op.existing(req, memberID)
	}
	if err != nil {
		return nil, err
	}
	metaChanged := !m.hasMeta
	if m.ClientID != clientID || m.ClientHost != clientHost {
		m.ClientID, m.ClientHost, metaChanged = clientID, clientHost, true
	}
	if req.RebalanceTimeoutMillis != -1 && m.RebalanceTimeout != req.RebalanceTimeoutMillis {
		m.RebalanceTimeout, metaChanged = req.RebalanceTimeoutMillis, true
	}
	if req.RackID != nil && deref(m.RackID) != *req.RackID {
		m.RackID, metaChanged = req.RackID, true
	}
	if op.subscribe(m, req) {
		op.bump()
		metaChanged = true
	}
	if metaChanged {
		m.hasMeta = true
		op.recs = append(op.recs, ConsumerMemberRecord(op.id, m))
	}
	op.finish()
	return op.reconcileMember(m, requestOwned(req.Topics)), nil
}

// join admits a member with epoch 0: new, rejoining, or a static member
// taking over the assignment its instance id left behind.
func (op *consumerOp) join(req *kmsg.ConsumerGroupHeartbeatRequest, memberID string) (*ConsumerMember, *kerr.Error) {
	g := op.g
	op.sendAssignment = true
	m := g.Members[memberID]
	if req.InstanceID != nil {
		old := g.static(*req.InstanceID)
		if old != nil && old.ID != memberID {
			if old.Epoch != -2 {
				return nil, kerr.UnreleasedInstanceID
			}
			m = old.clone()
			m.ID, m.Epoch, m.State = memberID, old.PrevEpoch, memberStable
			m.hasMeta, m.hasTarget, m.hasCurrent = false, false, false
			op.pre = append(op.pre, consumerMemberTombstones(op.id, old.ID)...)
			op.gone = append(op.gone, old.ID)
			delete(g.Members, old.ID)
			g.Members[memberID] = m
			op.recs = append(op.recs, TargetMemberRecord(op.id, memberID, m.Target))
			m.hasTarget = true
			return m, nil
		}
	}
	if m == nil {
		if len(g.Members) >= op.c.cfg.Consumer.MaxSize {
			return nil, kerr.GroupMaxSizeReached
		}
		m = &ConsumerMember{ID: memberID, RebalanceTimeout: -1}
		g.Members[memberID] = m
		op.bump()
	} else if m.Epoch == -2 {
		m.Epoch, m.State = m.PrevEpoch, memberStable // the static member is back
		op.recs = append(op.recs, CurrentAssignmentRecord(op.id, m))
	}
	m.InstanceID = req.InstanceID
	return m, nil
}

// existing checks a heartbeat of a member in an epoch against the
// member's (Kafka's throwIfMemberEpochIsInvalid): a newer epoch, or an
// older one other than its previous epoch with owned partitions it still
// holds, is fenced.
func (op *consumerOp) existing(req *kmsg.ConsumerGroupHeartbeatRequest, memberID string) (*ConsumerMember, *kerr.Error) {
	m := op.g.Members[memberID]
	if m == nil {
		if req.InstanceID != nil && op.g.static(*req.InstanceID) != nil {
			return nil, kerr.FencedInstanceID
		}
		return nil, kerr.UnknownMemberID
	}
	if req.InstanceID != nil && deref(m.InstanceID) != *req.InstanceID {
		return nil, kerr.FencedInstanceID
	}
	owned := requestOwned(req.Topics)
	switch {
	case req.MemberEpoch > m.Epoch:
		return nil, kerr.FencedMemberEpoch
	case req.MemberEpoch < m.Epoch:
		if req.MemberEpoch != m.PrevEpoch || owned == nil || !isSubset(owned, m.Assigned) {
			return nil, kerr.FencedMemberEpoch
		}
	}
	op.sendAssignment = req.RebalanceTimeoutMillis != -1 && req.Topics != nil &&
		(req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil)
	return m, nil
}

// leave removes a member (-1), or parks a static one (-2) with its
// assignment until it comes back or its session ends.
func (op *consumerOp) leave(req *kmsg.ConsumerGroupHeartbeatRequest, memberID string) *kerr.Error {
	m := op.g.Members[memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if req.MemberEpoch == -2 && m.InstanceID != nil {
		if m.Epoch != -2 {
			m.PrevEpoch, m.Epoch = m.Epoch, -2
		}
		m.Revoking, m.State = nil, memberStable
		op.recs = append(op.recs, CurrentAssignmentRecord(op.id, m))
		op.staticLeft = memberID
		return nil
	}
	op.remove(memberID)
	return nil
}

// remove drops a member and bumps the group epoch.
func (op *consumerOp) remove(memberID string) {
	op.pre = append(op.pre, consumerMemberTombstones(op.id, memberID)...)
	op.gone = append(op.gone, memberID)
	delete(op.g.Members, memberID)
	op.bump()
}

// subscribe applies a heartbeat's subscription and assignor, reporting
// whether they changed.
func (op *consumerOp) subscribe(m *ConsumerMember, req *kmsg.ConsumerGroupHeartbeatRequest) bool {
	changed := false
	if req.SubscribedTopicNames != nil {
		names := slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
		if !slices.Equal(names, m.Topics) || m.Topics == nil {
			m.Topics, changed = names, true
		}
	}
	if req.SubscribedTopicRegex != nil && deref(m.Regex) != *req.SubscribedTopicRegex {
		m.Regex, changed = nullable(*req.SubscribedTopicRegex), true
	}
	if req.ServerAssignor != nil && deref(m.Assignor) != *req.ServerAssignor {
		m.Assignor, changed = req.ServerAssignor, true
	}
	return changed
}

// finish bumps the group epoch if the subscribed topics' metadata
// changed, writes the group record if the epoch moved, and computes a
// new target assignment if the group epoch is ahead of it.
func (op *consumerOp) finish() {
	g := op.g
	op.resolveSelf()
	subscribed := op.subscribedTopics()
	if h := op.metadataHash(subscribed); h != g.MetadataHash {
		g.MetadataHash = h
		op.bump()
	}
	if op.bumped || op.converted {
		op.recs = append(op.recs, ConsumerGroupRecord(op.id, g.Epoch, g.MetadataHash))
	}
	if g.Epoch <= g.TargetEpoch || len(g.Members) == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(g.Members))
	in := make([]assignMember, len(ids))
	for i, id := range ids {
		in[i] = assignMember{id: id, topics: op.memberTopics(g.Members[id]), current: g.Members[id].Target}
	}
	out := assign(op.groupAssignor(), in, op.topics.subset(subscribed))
	for _, id := range ids {
		m := g.Members[id]
		if !m.hasTarget || !sameAssignment(m.Target, out[id]) {
			m.Target, m.hasTarget = out[id], true
			op.recs = append(op.recs, TargetMemberRecord(op.id, id, m.Target))
		}
	}
	g.TargetEpoch = g.Epoch
	op.recs = append(op.recs, TargetEpochRecord(op.id, g.TargetEpoch))
}

// reconcileMember moves a member towards its target and records its new
// current assignment if it changed.
func (op *consumerOp) reconcileMember(m *ConsumerMember, owned Assignment) *ConsumerMember {
	next := reconcile(op.g, m, owned)
	if next == m && m.hasCurrent {
		return m
	}
	if !sameAssignment(next.Assigned, m.Assigned) {
		op.sendAssignment = true
	}
	if !m.hasCurrent || !sameCurrent(next, m) {
		next.hasCurrent = true
		op.recs = append(op.recs, CurrentAssignmentRecord(op.id, next))
	}
	op.g.Members[m.ID] = next
	return next
}

// groupAssignor is the assignor most members name, the configured
// order breaking ties; the default if none names one.
func (op *consumerOp) groupAssignor() string {
	votes := make(map[string]int)
	for _, m := range op.g.Members {
		if m.Assignor != nil {
			votes[*m.Assignor]++
		}
	}
	best := op.c.cfg.Consumer.Assignors[0]
	for _, a := range op.c.cfg.Consumer.Assignors {
		if votes[a] > votes[best] {
			best = a
		}
	}
	return best
}

// static returns the member with a group.instance.id, if any.
func (g *ConsumerGroup) static(instanceID string) *ConsumerMember {
	for _, m := range g.Members {
		if m.InstanceID != nil && *m.InstanceID == instanceID {
			return m
		}
	}
	return nil
}
