package client

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the group leader's pure core: member metadata in, an
// assignment per member out. No I/O, no clock, no randomness; map order
// never decides anything.

// consumerProtocol is the protocol type of consumer groups.
const consumerProtocol = "consumer"

// joinedMember is a member of a JoinGroup response as the leader sees it.
type joinedMember struct {
	id, instanceID string
	topics         []string
	owned          map[string][]int32 // what the member says it owns
	generation     int32              // of its owned partitions; -1 unknown
}

// before orders members as Kafka's assignors do: static members first, by
// instance id, then dynamic ones by member id.
func (m *joinedMember) before(o *joinedMember) int {
	switch {
	case m.instanceID != "" && o.instanceID != "":
		return cmp.Or(cmp.Compare(m.instanceID, o.instanceID), cmp.Compare(m.id, o.id))
	case m.instanceID != "":
		return -1
	case o.instanceID != "":
		return 1
	}
	return cmp.Compare(m.id, o.id)
}

func (m *joinedMember) subscribes(topic string) bool { return slices.Contains(m.topics, topic) }

// memberMetadata encodes the subscription a member sends with JoinGroup
// (ConsumerProtocolSubscription v3): topics, owned partitions and their
// generation. For cooperative-sticky the user data also carries the
// current assignment in the format the Java and franz-go sticky assignors
// read.
func memberMetadata(s AssignStrategy, topics []string, owned map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = slices.Sorted(slices.Values(topics))
	meta.Generation = generation
	for _, t := range slices.Sorted(maps.Keys(owned)) {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = t, owned[t]
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	if s == CooperativeStickyAssign {
		sticky := kmsg.NewStickyMemberMetadata()
		sticky.Generation = generation
		for _, op := range meta.OwnedPartitions {
			ca := kmsg.NewStickyMemberMetadataCurrentAssignment()
			ca.Topic, ca.Partitions = op.Topic, op.Partitions
			sticky.CurrentAssignment = append(sticky.CurrentAssignment, ca)
		}
		meta.UserData = sticky.AppendTo(nil)
	}
	return meta.AppendTo(nil)
}

// parseMembers decodes the members of a JoinGroup response, sorted.
func parseMembers(ms []kmsg.JoinGroupResponseMember) ([]*joinedMember, error) {
	out := make([]*joinedMember, 0, len(ms))
	for _, m := range ms {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
			return nil, fmt.Errorf("client: member %s metadata: %w", m.MemberID, err)
		}
		jm := &joinedMember{id: m.MemberID, topics: meta.Topics, owned: map[string][]int32{}, generation: -1}
		if m.InstanceID != nil {
			jm.instanceID = *m.InstanceID
		}
		if meta.Version >= 2 {
			jm.generation = meta.Generation
		}
		for _, op := range meta.OwnedPartitions {
			jm.owned[op.Topic] = append(jm.owned[op.Topic], op.Partitions...)
		}
		out = append(out, jm)
	}
	slices.SortFunc(out, (*joinedMember).before)
	return out, nil
}

// encodeAssignment encodes one member's assignment
// (ConsumerProtocolAssignment), topics and partitions sorted.
func encodeAssignment(a map[string][]int32) []byte {
	ma := kmsg.NewConsumerMemberAssignment()
	for _, t := range slices.Sorted(maps.Keys(a)) {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = t, slices.Sorted(slices.Values(a[t]))
		ma.Topics = append(ma.Topics, at)
	}
	return ma.AppendTo(nil)
}

// decodeAssignment decodes the assignment SyncGroup gave this member.
func decodeAssignment(b []byte) (map[string][]int32, error) {
	out := map[string][]int32{}
	if len(b) == 0 {
		return out, nil // an empty assignment
	}
	var ma kmsg.ConsumerMemberAssignment
	if err := ma.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("client: decoding assignment: %w", err)
	}
	for _, t := range ma.Topics {
		if len(t.Partitions) > 0 {
			out[t.Topic] = append(out[t.Topic], t.Partitions...)
		}
	}
	for t := range out {
		slices.Sort(out[t])
		out[t] = slices.Compact(out[t])
	}
	return out, nil
}

// assign computes every member's assignment with the strategy. partitions
// is the partition count of each topic some member subscribes to (topics
// that do not exist are absent). cooperative removes, for this round,
// partitions that move away from a member that still owns them.
func assign(s AssignStrategy, members []*joinedMember, partitions map[string]int32, cooperative bool) map[string]map[string][]int32 {
	var plan map[string]map[string][]int32
	if s == RangeAssign {
		plan = assignRange(members, partitions)
	} else {
		plan = assignSticky(members, partitions)
	}
	if cooperative {
		withholdMoving(members, plan)
	}
	return plan
}

// assignRange is Kafka's RangeAssignor.
func assignRange(members []*joinedMember, partitions map[string]int32) map[string]map[string][]int32 {
	plan := emptyPlan(members)
	for _, t := range slices.Sorted(maps.Keys(partitions)) {
		var subs []*joinedMember
		for _, m := range members {
			if m.subscribes(t) {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := int(partitions[t])
		per, extra := n/len(subs), n%len(subs)
		for i, m := range subs {
			start := per*i + min(i, extra)
			count := per
			if i < extra {
				count++
			}
			for p := start; p < start+count; p++ {
				plan[m.id][t] = append(plan[m.id][t], int32(p))
			}
		}
	}
	return plan
}

func emptyPlan(members []*joinedMember) map[string]map[string][]int32 {
	plan := make(map[string]map[string][]int32, len(members))
	for _, m := range members {
		plan[m.id] = map[string][]int32{}
	}
	return plan
}

// stickyState is the sticky assignor's working state: who holds each
// partition and how many each member holds.
type stickyState struct {
	members []*joinedMember
	holder  map[tp]int // index into members
	held    [][]tp     // per member, in the order received
}

func (s *stickyState) give(p tp, i int) {
	s.holder[p] = i
	s.held[i] = append(s.held[i], p)
}

func (s *stickyState) take(p tp, i int) {
	s.held[i] = slices.DeleteFunc(s.held[i], func(q tp) bool { return q == p })
	delete(s.holder, p)
}

// leastLoaded is the member subscribed to topic holding the fewest
// partitions (the first in member order on a tie), -1 if none subscribes.
func (s *stickyState) leastLoaded(topic string) int {
	best := -1
	for i, m := range s.members {
		if m.subscribes(topic) && (best < 0 || len(s.held[i]) < len(s.held[best])) {
			best = i
		}
	}
	return best
}

// assignSticky keeps every valid claim (the highest generation wins a
// partition claimed twice), gives unowned partitions to the least loaded
// subscribed member, then moves partitions from the most to the least
// loaded members until no member holds two more than another that could
// take one of its partitions. Each move lowers the sum of squared loads,
// so the loop ends; with identical subscriptions the result is balanced
// and moves the fewest partitions.
func assignSticky(members []*joinedMember, partitions map[string]int32) map[string]map[string][]int32 {
	s := &stickyState{members: members, holder: map[tp]int{}, held: make([][]tp, len(members))}
	claimGen := map[tp]int32{}
	for i, m := range members {
		for _, t := range slices.Sorted(maps.Keys(m.owned)) {
			if !m.subscribes(t) {
				continue
			}
			for _, p := range m.owned[t] {
				q := tp{t, p}
				if p < 0 || p >= partitions[t] {
					continue
				}
				if prev, ok := s.holder[q]; ok {
					if m.generation <= claimGen[q] {
						continue
					}
					s.take(q, prev)
				}
				s.give(q, i)
				claimGen[q] = m.generation
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(partitions)) {
		for p := range partitions[t] {
			q := tp{t, p}
			if _, ok := s.holder[q]; ok {
				continue
			}
			if i := s.leastLoaded(t); i >= 0 {
				s.give(q, i)
			}
		}
	}
	for s.moveOne() {
	}
	plan := emptyPlan(members)
	for q, i := range s.holder {
		plan[members[i].id][q.topic] = append(plan[members[i].id][q.topic], q.partition)
	}
	for _, a := range plan {
		for t := range a {
			slices.Sort(a[t])
		}
	}
	return plan
}

// moveOne moves one partition from a member to one holding at least two
// fewer, trying the most loaded members first and their latest partitions
// first. It reports whether it moved one.
func (s *stickyState) moveOne() bool {
	order := make([]int, len(s.members))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(s.held[b]), len(s.held[a])) })
	for _, from := range order {
		held := s.held[from]
		for k := len(held) - 1; k >= 0; k-- {
			q := held[k]
			to := s.leastLoaded(q.topic)
			if to >= 0 && len(held)-len(s.held[to]) >= 2 {
				s.take(q, from)
				s.give(q, to)
				return true
			}
		}
	}
	return false
}

// withholdMoving removes from plan every partition that goes to a member
// other than the one that owns it now: the owner revokes it and rejoins,
// and the next rebalance assigns it (KIP-429). A claim that another
// member's claim at a higher generation beats does not count as owning.
func withholdMoving(members []*joinedMember, plan map[string]map[string][]int32) {
	owner := map[tp]string{}
	gen := map[tp]int32{}
	for _, m := range members {
		for t, ps := range m.owned {
			for _, p := range ps {
				q := tp{t, p}
				if g, ok := gen[q]; !ok || m.generation > g {
					owner[q], gen[q] = m.id, m.generation
				}
			}
		}
	}
	for id, a := range plan {
		for t, ps := range a {
			a[t] = slices.DeleteFunc(ps, func(p int32) bool {
				o, owned := owner[tp{t, p}]
				return owned && o != id
			})
			if len(a[t]) == 0 {
				delete(a, t)
			}
		}
	}
}
