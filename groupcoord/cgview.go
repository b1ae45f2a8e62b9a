package groupcoord

import (
	"fmt"
	"slices"
)

// applyConsumer applies one KIP-848 consumer group record. The member
// records (5, 7, 8) may come before the group's epoch record, as Kafka
// writes them; a member is gone once its three records are tombstoned,
// and the group once its epoch record is.
func (v *View) applyConsumer(version int16, key, value []byte) error {
	kr := cgReader{b: key[2:]}
	group := kr.str()
	var member string
	if version != cgMetadataKeyVersion && version != cgTargetMetaKeyVersion {
		member = kr.str()
	}
	if kr.err != nil || len(kr.b) != 0 {
		return &RecordError{Reason: fmt.Sprintf("consumer group key version %d", version), Err: kr.err}
	}
	if value == nil {
		v.applyConsumerTombstone(version, group, member)
		return nil
	}
	r := cgReader{b: value}
	if vv := r.i16(); vv != 0 && r.err == nil {
		return &RecordError{Reason: fmt.Sprintf("consumer group value version %d of key version %d", vv, version)}
	}
	var apply func(g *ConsumerGroup)
	switch version {
	case cgMetadataKeyVersion:
		apply = readGroupEpoch(&r)
	case cgTargetMetaKeyVersion:
		epoch := r.i32()
		r.tags(nil)
		apply = func(g *ConsumerGroup) { g.TargetEpoch = epoch }
	case cgMemberKeyVersion:
		apply = readMemberMetadata(&r, member)
	case cgTargetMemberKeyVersion:
		a := readTopicPartitions(&r)
		r.tags(nil)
		apply = func(g *ConsumerGroup) {
			m := g.member(member)
			m.Target, m.hasTarget = a, true
		}
	case cgCurrentAssignmentVersion:
		apply = readCurrentAssignment(&r, member)
	}
	if r.err != nil {
		return &RecordError{Reason: fmt.Sprintf("consumer group value of key version %d", version), Err: r.err}
	}
	vg := v.group(group)
	if vg.cg == nil {
		vg.cg = &ConsumerGroup{Members: make(map[string]*ConsumerMember)}
	}
	apply(vg.cg)
	return nil
}

func readGroupEpoch(r *cgReader) func(g *ConsumerGroup) {
	epoch := r.i32()
	var hash int64
	r.tags(func(tag uint64, b []byte) {
		if tag == 0 && len(b) == 8 {
			hr := cgReader{b: b}
			hash = hr.i64()
		}
	})
	return func(g *ConsumerGroup) { g.Epoch, g.MetadataHash = epoch, hash }
}

func readMemberMetadata(r *cgReader, id string) func(g *ConsumerGroup) {
	var m ConsumerMember
	m.InstanceID = r.cnstr()
	m.RackID = r.cnstr()
	m.ClientID = r.cstr()
	m.ClientHost = r.cstr()
	n := r.arr(1)
	for range n {
		m.Topics = append(m.Topics, r.cstr())
	}
	m.Regex = r.cnstr()
	m.RebalanceTimeout = r.i32()
	m.Assignor = r.cnstr()
	r.tags(nil) // ClassicMemberMetadata: this coordinator has no classic members in consumer groups
	return func(g *ConsumerGroup) {
		cur := g.member(id)
		cur.InstanceID, cur.RackID, cur.ClientID, cur.ClientHost = m.InstanceID, m.RackID, m.ClientID, m.ClientHost
		cur.Topics, cur.Regex, cur.RebalanceTimeout, cur.Assignor = m.Topics, m.Regex, m.RebalanceTimeout, m.Assignor
		cur.hasMeta = true
	}
}

func readCurrentAssignment(r *cgReader, id string) func(g *ConsumerGroup) {
	epoch, prev, state := r.i32(), r.i32(), r.i8()
	assigned := readTopicPartitions(r)
	revoking := readTopicPartitions(r)
	r.tags(nil)
	return func(g *ConsumerGroup) {
		m := g.member(id)
		m.Epoch, m.PrevEpoch, m.State = epoch, prev, state
		m.Assigned, m.Revoking, m.hasCurrent = assigned, revoking, true
	}
}

// member returns a member, creating it.
func (g *ConsumerGroup) member(id string) *ConsumerMember {
	m := g.Members[id]
	if m == nil {
		m = &ConsumerMember{ID: id}
		g.Members[id] = m
	}
	return m
}

func (v *View) applyConsumerTombstone(version int16, group, member string) {
	vg := v.groups[group]
	if vg == nil || vg.cg == nil {
		return
	}
	g := vg.cg
	switch version {
	case cgMetadataKeyVersion:
		vg.cg = nil
		v.dropIfEmpty(group, vg)
		return
	case cgTargetMetaKeyVersion:
		g.TargetEpoch = 0
		return
	}
	m := g.Members[member]
	if m == nil {
		return
	}
	switch version {
	case cgMemberKeyVersion:
		m.hasMeta = false
		m.InstanceID, m.RackID, m.Topics, m.Regex, m.Assignor = nil, nil, nil, nil, nil
	case cgTargetMemberKeyVersion:
		m.hasTarget, m.Target = false, nil
	case cgCurrentAssignmentVersion:
		m.hasCurrent, m.Assigned, m.Revoking = false, nil, nil
		m.Epoch, m.PrevEpoch, m.State = 0, 0, 0
	}
	if !m.hasMeta && !m.hasTarget && !m.hasCurrent {
		delete(g.Members, member)
	}
}

// ConsumerGroup returns a copy of a KIP-848 consumer group's state.
func (v *View) ConsumerGroup(group string) (*ConsumerGroup, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	vg := v.groups[group]
	if vg == nil || vg.cg == nil {
		return nil, false
	}
	return vg.cg.clone(), true
}

// isConsumerGroup reports whether group is a KIP-848 consumer group.
func (v *View) isConsumerGroup(group string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	vg := v.groups[group]
	return vg != nil && vg.cg != nil
}

// appendConsumerGroup appends the records that rebuild g to a snapshot:
// the epoch, the target epoch, then each member's records by member id.
func appendConsumerGroup(dst []byte, name string, g *ConsumerGroup) []byte {
	add := func(r Record) { dst = appendPair(dst, r.Key, r.Value) }
	add(ConsumerGroupRecord(name, g.Epoch, g.MetadataHash))
	add(TargetEpochRecord(name, g.TargetEpoch))
	ids := make([]string, 0, len(g.Members))
	for id := range g.Members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := g.Members[id]
		if m.hasMeta {
			add(ConsumerMemberRecord(name, m))
		}
		if m.hasTarget {
			add(TargetMemberRecord(name, id, m.Target))
		}
		if m.hasCurrent {
			add(CurrentAssignmentRecord(name, m))
		}
	}
	return dst
}
