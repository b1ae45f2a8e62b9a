package groupcoord

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareOp is one request's (or timer's) change to a share group: a copy
// of the group from the View, changed in place, and the records that
// make the View follow. Its shape is consumerOp's, without revocation:
// a share member takes its new target on its next heartbeat.
type shareOp struct {
	c      *Coordinator
	id     string
	g      *ShareGroup
	isNew  bool // the group does not exist yet
	bumped bool // the group epoch was bumped
	pre    []Record
	recs   []Record
	gone   []string // members removed: their timers stop
	topics topicCache
}

// newShareOp starts an op on a share group, or on a new one if create:
// a group id that names a classic or consumer group is GROUP_ID_NOT_FOUND,
// as Kafka answers (no migration between share and other groups).
func (c *Coordinator) newShareOp(id string, create bool) (*shareOp, *kerr.Error, string) {
	if g, ok := c.view.ShareGroup(id); ok {
		return &shareOp{c: c, id: id, g: g, topics: newTopicCache(c.cfg.Topics)}, nil, ""
	}
	if c.otherGroupExists(id) {
		return nil, kerr.GroupIDNotFound, "Group " + id + " is not a share group."
	}
	if !create {
		return nil, kerr.GroupIDNotFound, "Share group " + id + " not found."
	}
	return &shareOp{c: c, id: id, g: &ShareGroup{Members: make(map[string]*ShareMember)}, isNew: true,
		topics: newTopicCache(c.cfg.Topics)}, nil, ""
}

// otherGroupExists reports whether id is a classic group (stored, with
// offsets, or with members joining) or a consumer group.
func (c *Coordinator) otherGroupExists(id string) bool {
	if c.view.HasGroup(id) && !c.view.isShareGroup(id) {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	return g != nil && (len(g.members) > 0 || len(g.pending) > 0)
}

func (op *shareOp) records() []Record { return append(slices.Clip(op.pre), op.recs...) }

func (op *shareOp) bump() {
	if !op.bumped {
		op.g.Epoch++
		op.bumped = true
	}
}

// heartbeat applies a heartbeat (Kafka's shareGroupHeartbeat and
// shareGroupLeave) and returns the member as it now is (nil if it left)
// and whether its assignment goes in the answer: to a member joining, to
// a full heartbeat (one with its subscription), or when it changed.
func (op *shareOp) heartbeat(req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string) (*ShareMember, bool, *kerr.Error) {
	g := op.g
	m := g.Members[req.MemberID]
	switch {
	case req.MemberEpoch == -1:
		if m == nil {
			return nil, false, kerr.UnknownMemberID
		}
		op.remove(req.MemberID)
		op.finish()
		return nil, false, nil
	case req.MemberEpoch == 0 && m == nil:
		if len(g.Members) >= op.c.cfg.Share.MaxSize {
			return nil, false, kerr.GroupMaxSizeReached
		}
		m = &ShareMember{ID: req.MemberID}
		g.Members[req.MemberID] = m
		op.bump()
	case req.MemberEpoch == 0: // a member rejoining keeps its epoch
	case m == nil:
		return nil, false, kerr.UnknownMemberID
	case req.MemberEpoch > m.Epoch, req.MemberEpoch < m.Epoch && req.MemberEpoch != m.PrevEpoch:
		return nil, false, kerr.FencedMemberEpoch
	}
	metaChanged := !m.hasMeta
	if m.ClientID != clientID || m.ClientHost != clientHost {
		m.ClientID, m.ClientHost, metaChanged = clientID, clientHost, true
	}
	if req.RackID != nil && deref(m.RackID) != *req.RackID {
		m.RackID, metaChanged = req.RackID, true
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
		if !slices.Equal(names, m.Topics) {
			m.Topics, metaChanged = names, true
			op.bump()
		}
	}
	if metaChanged {
		m.hasMeta = true
		op.recs = append(op.recs, ShareMemberRecord(op.id, m))
	}
	op.finish()
	before := m.Assigned
	m = op.reconcile(m)
	full := req.MemberEpoch == 0 || req.SubscribedTopicNames != nil
	return m, full || !sameAssignment(before, m.Assigned), nil
}

// remove drops a member and bumps the group epoch.
func (op *shareOp) remove(memberID string) {
	op.pre = append(op.pre, shareMemberTombstones(op.id, memberID)...)
	op.gone = append(op.gone, memberID)
	delete(op.g.Members, memberID)
	op.bump()
}

// finish bumps the group epoch if the subscribed topics' metadata
// changed, writes the group record if the epoch moved, and computes a
// new target assignment if the group epoch is ahead of it.
func (op *shareOp) finish() {
	g := op.g
	subscribed := op.subscribedTopics()
	if h := topicsHash(op.topics, subscribed); h != g.MetadataHash {
		g.MetadataHash = h
		op.bump()
	}
	if op.bumped || op.isNew {
		op.recs = append(op.recs, ShareGroupRecord(op.id, g.Epoch, g.MetadataHash))
	}
	if g.Epoch <= g.TargetEpoch || len(g.Members) == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(g.Members))
	in := make([]assignMember, len(ids))
	for i, id := range ids {
		in[i] = assignMember{id: id, topics: op.memberTopics(g.Members[id]), current: g.Members[id].Target}
	}
	out := shareAssign(in, op.topics.subset(subscribed))
	for _, id := range ids {
		m := g.Members[id]
		if !m.hasTarget || !sameAssignment(m.Target, out[id]) {
			m.Target, m.hasTarget = out[id], true
			op.recs = append(op.recs, ShareTargetMemberRecord(op.id, id, m.Target))
		}
	}
	g.TargetEpoch = g.Epoch
	op.recs = append(op.recs, ShareTargetEpochRecord(op.id, g.TargetEpoch))
}

// reconcile moves a member to the target assignment at once, bumping
// its epoch to the target's (Kafka's ShareGroupAssignmentBuilder), and
// records its new current assignment.
func (op *shareOp) reconcile(m *ShareMember) *ShareMember {
	if m.hasCurrent && m.Epoch == op.g.TargetEpoch {
		return m
	}
	next := m.clone()
	if next.Epoch != op.g.TargetEpoch {
		next.PrevEpoch, next.Epoch = m.Epoch, op.g.TargetEpoch
	}
	next.State, next.Assigned, next.hasCurrent = memberStable, m.Target.clone(), true
	op.recs = append(op.recs, ShareCurrentAssignmentRecord(op.id, next))
	op.g.Members[m.ID] = next
	return next
}

// memberTopics are the existing topics a member subscribes to, sorted.
func (op *shareOp) memberTopics(m *ShareMember) []string {
	var out []string
	for _, t := range m.Topics {
		if _, ok := op.topics.get(t); ok {
			out = append(out, t)
		}
	}
	return out
}

func (op *shareOp) subscribedTopics() []string {
	set := make(map[string]bool)
	for _, m := range op.g.Members {
		for _, t := range op.memberTopics(m) {
			set[t] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
