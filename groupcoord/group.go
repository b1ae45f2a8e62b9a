package groupcoord

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is a classic group's state, as Kafka names them.
type groupState int8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s groupState) String() string { return stateNames[s] }

// consumerProtocolType is the protocol type of Kafka consumers, whose
// subscriptions the coordinator can read.
const consumerProtocolType = "consumer"

// group is a group's live state on its coordinator. Every field is
// guarded by Coordinator.mu.
type group struct {
	id           string
	state        groupState
	stateTime    time.Time
	protocolType string // "" until a member joined
	protocol     string // the generation's selected protocol; "" if none
	generation   int32
	leader       string // "" if none
	members      map[string]*member
	static       map[string]string         // group.instance.id → member id
	pending      map[string]*pendingMember // ids handed out with MEMBER_ID_REQUIRED
	pendingSync  map[string]bool           // members of the generation that have not synced
	votes        map[string]int            // protocol name → members supporting it
	awaiting     int                       // members whose JoinGroup waits

	// newMemberAdded records a member added during the initial
	// rebalance, which extends its delay.
	newMemberAdded bool
	// join completes the join phase; joinInitial marks the initial
	// rebalance's delay, which runs its whole time, with initDelay its
	// length and initRemaining what is left of the rebalance timeout.
	join                     *time.Timer
	joinInitial              bool
	initDelay, initRemaining time.Duration
	// sync expires the members that did not sync in time.
	sync *time.Timer
	// lastWrite is closed when the group's latest queued metadata write
	// has finished; writes wait for it, so they commit in order.
	lastWrite chan struct{}
	// expiring is closed when the group's offset expiry write in flight
	// ends; nil when none is. OffsetCommits wait for it (expiry.go).
	expiring chan struct{}
}

// member is one member of a group. Every field is guarded by
// Coordinator.mu.
type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []kmsg.JoinGroupRequestProtocol // in the member's order of preference
	assignment       []byte
	join             chan joinResult // a waiting JoinGroup's answer; nil if none waits
	sync             chan syncResult // a waiting SyncGroup's answer; nil if none waits
	isNew            bool            // joined, but no generation has included it yet
	heartbeat        *time.Timer     // expires the member
}

// pendingMember is a member id handed out with MEMBER_ID_REQUIRED whose
// JoinGroup has not come back yet.
type pendingMember struct {
	expiry *time.Timer // drops the id after the session timeout
}

// joinResult is a JoinGroup's answer before its version is applied.
type joinResult struct {
	err            *kerr.Error
	memberID       string
	generation     int32
	protocolType   *string
	protocol       *string
	leader         string
	skipAssignment bool
	members        []kmsg.JoinGroupResponseMember
}

// syncResult is a SyncGroup's answer before its version is applied.
type syncResult struct {
	err          *kerr.Error
	protocolType *string
	protocol     *string
	assignment   []byte
}

func joinError(memberID string, err *kerr.Error) joinResult {
	return joinResult{err: err, memberID: memberID, generation: -1}
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id:          id,
		state:       stateEmpty,
		stateTime:   now,
		members:     make(map[string]*member),
		static:      make(map[string]string),
		pending:     make(map[string]*pendingMember),
		pendingSync: make(map[string]bool),
		votes:       make(map[string]int),
	}
}

// loadGroup builds a group from its stored metadata: Stable with the
// stored generation if it had members, else Empty.
func loadGroup(id string, md GroupMetadata, now time.Time) *group {
	g := newGroup(id, now)
	g.generation = md.Generation
	g.protocolType = md.ProtocolType
	g.protocol = md.Protocol
	for _, sm := range md.Members {
		g.add(&member{
			id:               sm.ID,
			instanceID:       sm.InstanceID,
			clientID:         sm.ClientID,
			clientHost:       sm.ClientHost,
			rebalanceTimeout: time.Duration(sm.RebalanceTimeout) * time.Millisecond,
			sessionTimeout:   time.Duration(sm.SessionTimeout) * time.Millisecond,
			protocolType:     md.ProtocolType,
			protocols:        []kmsg.JoinGroupRequestProtocol{{Name: md.Protocol, Metadata: sm.Subscription}},
			assignment:       sm.Assignment,
		})
	}
	if md.Leader != "" && g.members[md.Leader] != nil {
		g.leader = md.Leader
	}
	if len(g.members) > 0 {
		g.state = stateStable
	}
	return g
}

func (g *group) setState(s groupState, now time.Time) {
	g.state = s
	g.stateTime = now
}

// add makes m a member (Kafka's GroupMetadata.add): the first member sets
// the protocol type and, without a leader, becomes the leader.
func (g *group) add(m *member) {
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	g.vote(m, 1)
	if m.join != nil {
		g.awaiting++
	}
}

// remove drops a member (its timers are the caller's); a leaving leader
// hands over to the first remaining member.
func (g *group) remove(id string) {
	m := g.members[id]
	if m != nil {
		delete(g.members, id)
		g.vote(m, -1)
		if m.join != nil {
			g.awaiting--
		}
		if m.instanceID != nil && g.static[*m.instanceID] == id {
			delete(g.static, *m.instanceID)
		}
	}
	if g.leader == id {
		g.leader = ""
		if ids := g.memberIDs(); len(ids) > 0 {
			g.leader = ids[0]
		}
	}
	delete(g.pendingSync, id)
}

func (g *group) vote(m *member, n int) {
	for _, p := range m.protocols {
		g.votes[p.Name] += n
		if g.votes[p.Name] == 0 {
			delete(g.votes, p.Name)
		}
	}
}

// update replaces a member's protocols and timeouts and sets (or clears,
// with a nil wait) its waiting JoinGroup.
func (g *group) update(m *member, protocols []kmsg.JoinGroupRequestProtocol, rebalance, session time.Duration, wait chan joinResult) {
	g.vote(m, -1)
	m.protocols = protocols
	g.vote(m, 1)
	m.rebalanceTimeout, m.sessionTimeout = rebalance, session
	switch {
	case wait != nil && m.join == nil:
		g.awaiting++
	case wait == nil && m.join != nil:
		g.awaiting--
	case wait != nil && m.join != nil:
		// The client asked again (for example after its request timed
		// out); the older request is answered so that nothing hangs.
		m.join <- joinError(m.id, kerr.RebalanceInProgress)
	}
	m.join = wait
}

// answerJoin answers m's waiting JoinGroup, if any.
func (g *group) answerJoin(m *member, r joinResult) {
	if m.join != nil {
		m.join <- r
		m.join = nil
		g.awaiting--
	}
}

// answerSync answers m's waiting SyncGroup, if any; it reports whether
// one waited.
func (g *group) answerSync(m *member, r syncResult) bool {
	if m.sync == nil {
		return false
	}
	m.sync <- r
	m.sync = nil
	return true
}

// supportsProtocols is Kafka's check of a joining member's protocols: an
// empty group takes any non-empty type and list; otherwise the type must
// match and one protocol be supported by every member.
func (g *group) supportsProtocols(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if g.state == stateEmpty {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	return slices.ContainsFunc(protocols, func(p kmsg.JoinGroupRequestProtocol) bool {
		return g.votes[p.Name] == len(g.members)
	})
}

// selectProtocol picks the protocol every member supports that most
// members prefer; ties go to the smallest name.
func (g *group) selectProtocol() string {
	tally := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.votes[p.Name] == len(g.members) {
				tally[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, name := range slices.Sorted(maps.Keys(tally)) {
		if best == "" || tally[name] > tally[best] {
			best = name
		}
	}
	return best
}

func (g *group) hasAllJoined() bool {
	return g.awaiting == len(g.members) && len(g.pending) == 0
}

func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *group) memberIDs() []string {
	return slices.Sorted(maps.Keys(g.members))
}

// sortedMembers lists the members by id, so that answers and records do
// not depend on map order.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, id := range g.memberIDs() {
		ms = append(ms, g.members[id])
	}
	return ms
}

// metadataFor returns m's metadata for a protocol.
func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches reports whether a JoinGroup's protocols are m's, in order.
func (m *member) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// joinMembers is the member list a generation's leader receives.
func (g *group) joinMembers() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.sortedMembers() {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = m.id, m.instanceID, m.metadataFor(g.protocol)
		out = append(out, jm)
	}
	return out
}

// joinSuccess is the answer to member id of the current generation.
func (g *group) joinSuccess(id string, leader string, withMembers bool) joinResult {
	r := joinResult{
		memberID:     id,
		generation:   g.generation,
		protocolType: nullable(g.protocolType),
		protocol:     nullable(g.protocol),
		leader:       leader,
	}
	if withMembers {
		r.members = g.joinMembers()
	}
	return r
}

// metadata is the record value of the group with the given assignments
// (the members' current ones if nil).
func (g *group) metadata(now time.Time, assignments map[string][]byte) *GroupMetadata {
	md := &GroupMetadata{
		ProtocolType:   g.protocolType,
		Generation:     g.generation,
		Protocol:       g.protocol,
		Leader:         g.leader,
		StateTimestamp: now.UnixMilli(),
	}
	for _, m := range g.sortedMembers() {
		a := m.assignment
		if assignments != nil {
			a = assignments[m.id]
		}
		md.Members = append(md.Members, Member{
			ID:               m.id,
			InstanceID:       m.instanceID,
			ClientID:         m.clientID,
			ClientHost:       m.clientHost,
			RebalanceTimeout: int32(m.rebalanceTimeout / time.Millisecond),
			SessionTimeout:   int32(m.sessionTimeout / time.Millisecond),
			Subscription:     m.metadataFor(g.protocol),
			Assignment:       a,
		})
	}
	return md
}

// subscribed reports whether the group's consumers subscribe to a topic.
// Kafka answers yes when it cannot tell: for protocols other than
// "consumer" and for metadata it cannot parse.
func (g *group) subscribed(topic string) bool {
	if g.protocolType != consumerProtocolType || g.protocol == "" {
		return g.protocolType != consumerProtocolType || len(g.members) > 0
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return true
		}
		if slices.Contains(meta.Topics, topic) {
			return true
		}
	}
	return false
}

// rename gives a member a new id (a static member replaced by a newer
// instance), keeping its leadership and pending sync.
func (g *group) rename(m *member, newID string) {
	oldID := m.id
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	if g.leader == oldID {
		g.leader = newID
	}
	if m.instanceID != nil {
		g.static[*m.instanceID] = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
}
