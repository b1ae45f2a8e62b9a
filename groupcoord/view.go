package groupcoord

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// View is the materialised state of one __consumer_offsets partition: the
// latest committed offset of every group's partitions and every group's
// last stored metadata, built by applying the partition's records in log
// order. It is deterministic: the same records in the same order give the
// same view on every replica, and nothing it returns depends on a clock,
// randomness or map order.
//
// Apply, ApplyBatch and Restore are called by the partition's state
// machine, one at a time; every other method may be called concurrently
// with them and with each other.
type View struct {
	// mu guards groups, pending, seq and everything reachable from them.
	// Apply, ApplyTxn, Marker and Restore hold it for writing; readers
	// hold it for reading and return copies, so nothing they return
	// changes under the caller.
	mu     sync.RWMutex
	groups map[string]*viewGroup
	// pending are transactional offset commits (TxnOffsetCommit) by
	// producer id, in log order, until the producer's marker: COMMIT
	// makes them committed offsets, ABORT drops them.
	pending map[int64][]pendingOffset
	// seq numbers the offset records applied, committed or pending, in
	// log order: a COMMIT marker makes a pending offset visible only over
	// an offset committed before it (Kafka compares log positions).
	seq int64
}

// pendingOffset is one transactional offset commit awaiting its marker.
type pendingOffset struct {
	group string
	tp    topicPartition
	o     Offset
	seq   int64
	epoch int16  // the producer epoch of its batch
	txnID string // its transactional id (TxnIDHeader), "" if unnamed
}

// viewGroup is what the view knows of one group. A group with neither
// metadata nor offsets is removed from the view.
type viewGroup struct {
	meta    *GroupMetadata // nil: never stored, or deleted
	cg      *ConsumerGroup // a KIP-848 consumer group; nil if none
	sg      *ShareGroup    // a KIP-932 share group; nil if none
	offsets map[topicPartition]Offset
	seqs    map[topicPartition]int64 // View.seq of each offset's record
}

type topicPartition struct {
	topic     string
	partition int32
}

// PartitionOffset is a committed offset with the partition it belongs to.
type PartitionOffset struct {
	Topic     string
	Partition int32
	Offset
}

// NewView returns an empty view.
func NewView() *View {
	return &View{groups: make(map[string]*viewGroup), pending: make(map[int64][]pendingOffset)}
}

// Apply applies one record of the partition: an offset commit, classic
// group metadata (any key and value version Kafka has written) or a
// KIP-848 consumer group record (key versions 3, 5-8, cgview.go), a
// KIP-932 share group record (10-14, sharerecords.go), or a tombstone
// (nil value) that deletes one. A record it cannot decode is an error
// wrapping ErrInvalidRecord, and a key version Kafka uses for other kinds
// of records (streams groups, the partition metadata of KIP-848 and share
// groups, which this coordinator does not write) one wrapping
// ErrUnknownRecord; in
// both cases the view is unchanged, so replicas that ignore the error stay
// identical.
func (v *View) Apply(key, value []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.applyLocked(key, value)
}

// ApplyBatch applies every record of one v2 RecordBatch of the partition,
// in order. It stops at the first record that does not decode; records
// with key versions it does not know are skipped.
func (v *View) ApplyBatch(batch []byte) error {
	recs, err := record.AppendRecords(nil, batch)
	if err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range recs {
		if err := v.applyLocked(r.Key, r.Value); err != nil && !isUnknown(err) {
			return err
		}
	}
	return nil
}

func (v *View) applyLocked(key, value []byte) error {
	if len(key) < 2 {
		return &RecordError{Reason: fmt.Sprintf("key of %d bytes", len(key))}
	}
	switch version := int16(binary.BigEndian.Uint16(key)); version {
	case 0, 1:
		return v.applyOffset(key, value)
	case groupKeyVersion:
		return v.applyGroup(key, value)
	case cgMetadataKeyVersion, cgMemberKeyVersion, cgTargetMetaKeyVersion, cgTargetMemberKeyVersion, cgCurrentAssignmentVersion:
		return v.applyConsumer(version, key, value)
	case sgMemberKeyVersion, sgMetadataKeyVersion, sgTargetMetaKeyVersion, sgTargetMemberKeyVersion, sgCurrentAssignmentVersion:
		return v.applyShare(version, key, value)
	default:
		return &RecordError{Reason: fmt.Sprintf("key version %d", version), unknown: version > 0}
	}
}

func (v *View) applyOffset(key, value []byte) error {
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return &RecordError{Reason: "offset commit key", Err: err}
	}
	tp := topicPartition{k.Topic, k.Partition}
	if value == nil {
		if g := v.groups[k.Group]; g != nil {
			delete(g.offsets, tp)
			delete(g.seqs, tp)
			v.dropIfEmpty(k.Group, g)
		}
		return nil
	}
	var val kmsg.OffsetCommitValue
	if err := val.ReadFrom(value); err != nil {
		return &RecordError{Reason: "offset commit value", Err: err}
	}
	if val.Version < 0 || val.Version > 4 {
		return &RecordError{Reason: fmt.Sprintf("offset commit value version %d", val.Version)}
	}
	if val.Version < 3 {
		val.LeaderEpoch = -1
	}
	g := v.group(k.Group)
	v.seq++
	g.seqs[tp] = v.seq
	g.offsets[tp] = Offset{
		Offset:          val.Offset,
		LeaderEpoch:     val.LeaderEpoch,
		Metadata:        val.Metadata,
		CommitTimestamp: val.CommitTimestamp,
	}
	return nil
}

func (v *View) applyGroup(key, value []byte) error {
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return &RecordError{Reason: "group metadata key", Err: err}
	}
	if value == nil {
		if g := v.groups[k.Group]; g != nil {
			g.meta = nil
			v.dropIfEmpty(k.Group, g)
		}
		return nil
	}
	var val kmsg.GroupMetadataValue
	if err := val.ReadFrom(value); err != nil {
		return &RecordError{Reason: "group metadata value", Err: err}
	}
	if val.Version < 0 || val.Version > 4 {
		return &RecordError{Reason: fmt.Sprintf("group metadata value version %d", val.Version)}
	}
	md := &GroupMetadata{
		ProtocolType:   val.ProtocolType,
		Generation:     val.Generation,
		Protocol:       deref(val.Protocol),
		Leader:         deref(val.Leader),
		StateTimestamp: val.CurrentStateTimestamp,
		Members:        make([]Member, len(val.Members)),
	}
	for i, m := range val.Members {
		// The decoded byte slices alias value, which the caller owns.
		md.Members[i] = cloneMember(Member{
			ID:               m.MemberID,
			InstanceID:       m.InstanceID,
			ClientID:         m.ClientID,
			ClientHost:       m.ClientHost,
			RebalanceTimeout: m.RebalanceTimeoutMillis,
			SessionTimeout:   m.SessionTimeoutMillis,
			Subscription:     m.Subscription,
			Assignment:       m.Assignment,
		})
	}
	v.group(k.Group).meta = md
	return nil
}

// group returns a group's entry, creating it.
func (v *View) group(name string) *viewGroup {
	g := v.groups[name]
	if g == nil {
		g = &viewGroup{offsets: make(map[topicPartition]Offset), seqs: make(map[topicPartition]int64)}
		v.groups[name] = g
	}
	return g
}

func (v *View) dropIfEmpty(name string, g *viewGroup) {
	if g.meta == nil && g.cg == nil && g.sg == nil && len(g.offsets) == 0 {
		delete(v.groups, name)
	}
}

// Offset returns a group's committed offset of one partition.
func (v *View) Offset(group, topic string, partition int32) (Offset, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	g := v.groups[group]
	if g == nil {
		return Offset{}, false
	}
	o, ok := g.offsets[topicPartition{topic, partition}]
	return o, ok
}

// Offsets returns every committed offset of a group, ordered by topic and
// partition.
func (v *View) Offsets(group string) []PartitionOffset {
	v.mu.RLock()
	defer v.mu.RUnlock()
	g := v.groups[group]
	if g == nil {
		return nil
	}
	return sortedOffsets(g)
}

func sortedOffsets(g *viewGroup) []PartitionOffset {
	out := make([]PartitionOffset, 0, len(g.offsets))
	for tp, o := range g.offsets {
		out = append(out, PartitionOffset{Topic: tp.topic, Partition: tp.partition, Offset: o})
	}
	slices.SortFunc(out, func(a, b PartitionOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// Group returns a group's last stored metadata. The members' byte slices
// are shared and must not be modified.
func (v *View) Group(group string) (GroupMetadata, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	g := v.groups[group]
	if g == nil || g.meta == nil {
		return GroupMetadata{}, false
	}
	md := *g.meta
	md.Members = slices.Clone(md.Members)
	return md, true
}

// HasGroup reports whether the view holds metadata or offsets of a group.
func (v *View) HasGroup(group string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.groups[group] != nil
}

// Groups returns every group the view holds metadata or offsets of,
// sorted.
func (v *View) Groups() []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return slices.Sorted(maps.Keys(v.groups))
}

// Equal reports whether two views hold the same state.
func (v *View) Equal(o *View) bool {
	return bytes.Equal(v.AppendSnapshot(nil), o.AppendSnapshot(nil))
}
