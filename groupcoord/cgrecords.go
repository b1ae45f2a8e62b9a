package groupcoord

import (
	"cmp"
	"maps"
	"slices"
)

// Key versions of the KIP-848 consumer group records (Kafka's
// GroupCoordinatorRecordHelpers); every value is version 0.
const (
	cgMetadataKeyVersion       = 3 // group epoch
	cgMemberKeyVersion         = 5 // member metadata (subscription)
	cgTargetMetaKeyVersion     = 6 // target assignment epoch
	cgTargetMemberKeyVersion   = 7 // a member's target assignment
	cgCurrentAssignmentVersion = 8 // a member's current assignment
)

// TopicID is a topic's id, as Kafka's records and the KIP-848 APIs name
// topics.
type TopicID [16]byte

// Assignment maps topics to partitions, each list sorted and without
// duplicates.
type Assignment map[TopicID][]int32

// Member states of a current member assignment (Kafka's MemberState).
const (
	memberStable               int8 = 0
	memberUnrevokedPartitions  int8 = 1
	memberUnreleasedPartitions int8 = 2
)

// ConsumerGroup is a KIP-848 consumer group as its records store it.
type ConsumerGroup struct {
	Epoch        int32 // the group epoch
	MetadataHash int64 // of the subscribed topics, when Epoch was set
	TargetEpoch  int32 // the target assignment's epoch
	Members      map[string]*ConsumerMember
}

// ConsumerMember is one member of a consumer group: its metadata, target
// assignment and current assignment, each from its own record.
type ConsumerMember struct {
	ID                   string
	InstanceID, RackID   *string
	ClientID, ClientHost string
	Topics               []string
	Regex                *string
	RebalanceTimeout     int32 // milliseconds
	Assignor             *string

	Epoch, PrevEpoch   int32
	State              int8
	Assigned, Revoking Assignment

	Target Assignment

	hasMeta, hasTarget, hasCurrent bool
}

// clone copies a group deeply.
func (g *ConsumerGroup) clone() *ConsumerGroup {
	out := *g
	out.Members = make(map[string]*ConsumerMember, len(g.Members))
	for id, m := range g.Members {
		out.Members[id] = m.clone()
	}
	return &out
}

func (m *ConsumerMember) clone() *ConsumerMember {
	out := *m
	out.Topics = slices.Clone(m.Topics)
	out.Assigned, out.Revoking, out.Target = m.Assigned.clone(), m.Revoking.clone(), m.Target.clone()
	return &out
}

func (a Assignment) clone() Assignment {
	if a == nil {
		return nil
	}
	out := make(Assignment, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

// sortedIDs are a's topics in byte order.
func (a Assignment) sortedIDs() []TopicID {
	return slices.SortedFunc(maps.Keys(a), func(x, y TopicID) int { return cmp.Compare(string(x[:]), string(y[:])) })
}

func cgKey(version int16, group string, member *string) []byte {
	var w cgWriter
	w.i16(version)
	w.str(group)
	if member != nil {
		w.str(*member)
	}
	return w.b
}

// ConsumerGroupRecord stores a consumer group's epoch (key version 3).
func ConsumerGroupRecord(group string, epoch int32, hash int64) Record {
	var w cgWriter
	w.i16(0)
	w.i32(epoch)
	if hash == 0 {
		w.noTags()
	} else { // tag 0: MetadataHash, an int64
		w.uv(1)
		w.uv(0)
		w.uv(8)
		w.i64(hash)
	}
	return Record{Key: cgKey(cgMetadataKeyVersion, group, nil), Value: w.b}
}

// ConsumerGroupTombstone deletes a consumer group.
func ConsumerGroupTombstone(group string) Record {
	return Record{Key: cgKey(cgMetadataKeyVersion, group, nil)}
}

// ConsumerMemberRecord stores a member's metadata (key version 5).
func ConsumerMemberRecord(group string, m *ConsumerMember) Record {
	var w cgWriter
	w.i16(0)
	w.cnstr(m.InstanceID)
	w.cnstr(m.RackID)
	w.cstr(m.ClientID)
	w.cstr(m.ClientHost)
	w.arr(len(m.Topics))
	for _, t := range m.Topics {
		w.cstr(t)
	}
	w.cnstr(m.Regex)
	w.i32(m.RebalanceTimeout)
	w.cnstr(m.Assignor)
	w.noTags()
	return Record{Key: cgKey(cgMemberKeyVersion, group, &m.ID), Value: w.b}
}

// TargetEpochRecord stores a group's target assignment epoch (key 6).
func TargetEpochRecord(group string, epoch int32) Record {
	var w cgWriter
	w.i16(0)
	w.i32(epoch)
	w.noTags()
	return Record{Key: cgKey(cgTargetMetaKeyVersion, group, nil), Value: w.b}
}

// TargetMemberRecord stores a member's target assignment (key 7).
func TargetMemberRecord(group, member string, a Assignment) Record {
	var w cgWriter
	w.i16(0)
	appendTopicPartitions(&w, a)
	w.noTags()
	return Record{Key: cgKey(cgTargetMemberKeyVersion, group, &member), Value: w.b}
}

// CurrentAssignmentRecord stores a member's current assignment (key 8).
func CurrentAssignmentRecord(group string, m *ConsumerMember) Record {
	var w cgWriter
	w.i16(0)
	w.i32(m.Epoch)
	w.i32(m.PrevEpoch)
	w.i8(m.State)
	appendTopicPartitions(&w, m.Assigned)
	appendTopicPartitions(&w, m.Revoking)
	w.noTags()
	return Record{Key: cgKey(cgCurrentAssignmentVersion, group, &m.ID), Value: w.b}
}

// consumerMemberTombstones delete a member's three records, in the order
// Kafka writes them.
func consumerMemberTombstones(group, member string) []Record {
	return []Record{
		{Key: cgKey(cgCurrentAssignmentVersion, group, &member)},
		{Key: cgKey(cgTargetMemberKeyVersion, group, &member)},
		{Key: cgKey(cgMemberKeyVersion, group, &member)},
	}
}

// consumerGroupTombstones delete a consumer group with no members.
func consumerGroupTombstones(group string) []Record {
	return []Record{{Key: cgKey(cgTargetMetaKeyVersion, group, nil)}, ConsumerGroupTombstone(group)}
}

// appendTopicPartitions writes an assignment sorted by topic id; its
// partitions are sorted already.
func appendTopicPartitions(w *cgWriter, a Assignment) {
	ids := a.sortedIDs()
	w.arr(len(ids))
	for _, id := range ids {
		w.uuid(id)
		w.arr(len(a[id]))
		for _, p := range a[id] {
			w.i32(p)
		}
		w.noTags()
	}
}

func readTopicPartitions(r *cgReader) Assignment {
	n := r.arr(18)
	if n <= 0 {
		return nil
	}
	a := make(Assignment, n)
	for range n {
		id := r.uuid()
		np := r.arr(4)
		ps := make([]int32, 0, max(np, 0))
		for range np {
			ps = append(ps, r.i32())
		}
		r.tags(nil)
		ps = append(a[id], ps...)
		slices.Sort(ps)
		a[id] = slices.Compact(ps)
	}
	return a
}
