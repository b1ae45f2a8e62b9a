package groupcoord

import (
	"fmt"
	"maps"
	"slices"
)

// Key versions of the KIP-932 share group records (Kafka's
// CoordinatorRecordType: ShareGroupMemberMetadata 10, ShareGroupMetadata
// 11, ShareGroupTargetAssignmentMetadata 12, ShareGroupTargetAssignment-
// Member 13, ShareGroupCurrentMemberAssignment 14); every value is
// version 0. Kafka's share partition metadata records (9, 15) are not
// written here: the share-partition state lives elsewhere.
const (
	sgMemberKeyVersion         = 10
	sgMetadataKeyVersion       = 11
	sgTargetMetaKeyVersion     = 12
	sgTargetMemberKeyVersion   = 13
	sgCurrentAssignmentVersion = 14
)

// ShareGroup is a KIP-932 share group as its records store it.
type ShareGroup struct {
	Epoch        int32 // the group epoch
	MetadataHash int64 // of the subscribed topics, when Epoch was set
	TargetEpoch  int32 // the target assignment's epoch
	Members      map[string]*ShareMember
}

// ShareMember is one member of a share group: its metadata, target
// assignment and current assignment, each from its own record. Share
// members never revoke: a member takes its target at once, on its next
// heartbeat (Kafka's ShareGroupAssignmentBuilder), so State is always
// stable.
type ShareMember struct {
	ID                   string
	RackID               *string
	ClientID, ClientHost string
	Topics               []string // subscribed topic names, sorted

	Epoch, PrevEpoch int32
	State            int8
	Assigned         Assignment

	Target Assignment

	hasMeta, hasTarget, hasCurrent bool
}

func (g *ShareGroup) clone() *ShareGroup {
	out := *g
	out.Members = make(map[string]*ShareMember, len(g.Members))
	for id, m := range g.Members {
		out.Members[id] = m.clone()
	}
	return &out
}

func (m *ShareMember) clone() *ShareMember {
	out := *m
	out.Topics = slices.Clone(m.Topics)
	out.Assigned, out.Target = m.Assigned.clone(), m.Target.clone()
	return &out
}

// member returns a member, creating it.
func (g *ShareGroup) member(id string) *ShareMember {
	m := g.Members[id]
	if m == nil {
		m = &ShareMember{ID: id}
		g.Members[id] = m
	}
	return m
}

// ShareGroupRecord stores a share group's epoch (key version 11), with
// the subscribed topics' metadata hash in tag 0 as Kafka 4.1 does.
func ShareGroupRecord(group string, epoch int32, hash int64) Record {
	r := ConsumerGroupRecord(group, epoch, hash) // the same value layout
	r.Key = cgKey(sgMetadataKeyVersion, group, nil)
	return r
}

// ShareMemberRecord stores a member's metadata (key version 10).
func ShareMemberRecord(group string, m *ShareMember) Record {
	var w cgWriter
	w.i16(0)
	w.cnstr(m.RackID)
	w.cstr(m.ClientID)
	w.cstr(m.ClientHost)
	w.arr(len(m.Topics))
	for _, t := range m.Topics {
		w.cstr(t)
	}
	w.noTags()
	return Record{Key: cgKey(sgMemberKeyVersion, group, &m.ID), Value: w.b}
}

// ShareTargetEpochRecord stores a share group's target assignment epoch
// (key version 12).
func ShareTargetEpochRecord(group string, epoch int32) Record {
	r := TargetEpochRecord(group, epoch)
	r.Key = cgKey(sgTargetMetaKeyVersion, group, nil)
	return r
}

// ShareTargetMemberRecord stores a member's target assignment (key 13).
func ShareTargetMemberRecord(group, member string, a Assignment) Record {
	r := TargetMemberRecord(group, member, a)
	r.Key = cgKey(sgTargetMemberKeyVersion, group, &member)
	return r
}

// ShareCurrentAssignmentRecord stores a member's current assignment (key
// 14): its epochs, state and assigned partitions.
func ShareCurrentAssignmentRecord(group string, m *ShareMember) Record {
	var w cgWriter
	w.i16(0)
	w.i32(m.Epoch)
	w.i32(m.PrevEpoch)
	w.i8(m.State)
	appendTopicPartitions(&w, m.Assigned, nil)
	w.noTags()
	return Record{Key: cgKey(sgCurrentAssignmentVersion, group, &m.ID), Value: w.b}
}

// shareMemberTombstones delete a member's three records, in the order
// Kafka writes them.
func shareMemberTombstones(group, member string) []Record {
	return []Record{
		{Key: cgKey(sgCurrentAssignmentVersion, group, &member)},
		{Key: cgKey(sgTargetMemberKeyVersion, group, &member)},
		{Key: cgKey(sgMemberKeyVersion, group, &member)},
	}
}

// shareGroupTombstones delete a share group with no members.
func shareGroupTombstones(group string) []Record {
	return []Record{{Key: cgKey(sgTargetMetaKeyVersion, group, nil)}, {Key: cgKey(sgMetadataKeyVersion, group, nil)}}
}

// applyShare applies one share group record; like the consumer group
// records, member records may come before the group's epoch record.
func (v *View) applyShare(version int16, key, value []byte) error {
	kr := cgReader{b: key[2:]}
	group := kr.str()
	var member string
	if version != sgMetadataKeyVersion && version != sgTargetMetaKeyVersion {
		member = kr.str()
	}
	if kr.err != nil || len(kr.b) != 0 {
		return &RecordError{Reason: fmt.Sprintf("share group key version %d", version), Err: kr.err}
	}
	if value == nil {
		v.applyShareTombstone(version, group, member)
		return nil
	}
	r := cgReader{b: value}
	if vv := r.i16(); vv != 0 && r.err == nil {
		return &RecordError{Reason: fmt.Sprintf("share group value version %d of key version %d", vv, version)}
	}
	apply := readShareValue(&r, version, member)
	if r.err != nil {
		return &RecordError{Reason: fmt.Sprintf("share group value of key version %d", version), Err: r.err}
	}
	vg := v.group(group)
	if vg.sg == nil {
		vg.sg = &ShareGroup{Members: make(map[string]*ShareMember)}
	}
	apply(vg.sg)
	return nil
}

// readShareValue decodes a share group value into the change it makes.
func readShareValue(r *cgReader, version int16, member string) func(g *ShareGroup) {
	switch version {
	case sgMetadataKeyVersion:
		set := readGroupEpoch(r)
		return func(g *ShareGroup) {
			var cg ConsumerGroup
			set(&cg)
			g.Epoch, g.MetadataHash = cg.Epoch, cg.MetadataHash
		}
	case sgTargetMetaKeyVersion:
		epoch := r.i32()
		r.tags(nil)
		return func(g *ShareGroup) { g.TargetEpoch = epoch }
	case sgMemberKeyVersion:
		var m ShareMember
		m.RackID, m.ClientID, m.ClientHost = r.cnstr(), r.cstr(), r.cstr()
		for range r.arr(1) {
			m.Topics = append(m.Topics, r.cstr())
		}
		r.tags(nil)
		return func(g *ShareGroup) {
			cur := g.member(member)
			cur.RackID, cur.ClientID, cur.ClientHost, cur.Topics = m.RackID, m.ClientID, m.ClientHost, m.Topics
			cur.hasMeta = true
		}
	case sgTargetMemberKeyVersion:
		a, _ := readTopicPartitions(r)
		r.tags(nil)
		return func(g *ShareGroup) {
			m := g.member(member)
			m.Target, m.hasTarget = a, true
		}
	default: // sgCurrentAssignmentVersion
		epoch, prev, state := r.i32(), r.i32(), r.i8()
		a, _ := readTopicPartitions(r)
		r.tags(nil)
		return func(g *ShareGroup) {
			m := g.member(member)
			m.Epoch, m.PrevEpoch, m.State, m.Assigned, m.hasCurrent = epoch, prev, state, a, true
		}
	}
}

func (v *View) applyShareTombstone(version int16, group, member string) {
	vg := v.groups[group]
	if vg == nil || vg.sg == nil {
		return
	}
	g := vg.sg
	switch version {
	case sgMetadataKeyVersion:
		vg.sg = nil
		v.dropIfEmpty(group, vg)
		return
	case sgTargetMetaKeyVersion:
		g.TargetEpoch = 0
		return
	}
	m := g.Members[member]
	if m == nil {
		return
	}
	switch version {
	case sgMemberKeyVersion:
		m.hasMeta, m.RackID, m.Topics = false, nil, nil
	case sgTargetMemberKeyVersion:
		m.hasTarget, m.Target = false, nil
	case sgCurrentAssignmentVersion:
		m.hasCurrent, m.Assigned, m.Epoch, m.PrevEpoch, m.State = false, nil, 0, 0, 0
	}
	if !m.hasMeta && !m.hasTarget && !m.hasCurrent {
		delete(g.Members, member)
	}
}

// appendShareGroup appends the records that rebuild g to a snapshot.
func appendShareGroup(dst []byte, name string, g *ShareGroup) []byte {
	add := func(r Record) { dst = appendPair(dst, r.Key, r.Value) }
	add(ShareGroupRecord(name, g.Epoch, g.MetadataHash))
	add(ShareTargetEpochRecord(name, g.TargetEpoch))
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		m := g.Members[id]
		if m.hasMeta {
			add(ShareMemberRecord(name, m))
		}
		if m.hasTarget {
			add(ShareTargetMemberRecord(name, id, m.Target))
		}
		if m.hasCurrent {
			add(ShareCurrentAssignmentRecord(name, m))
		}
	}
	return dst
}
