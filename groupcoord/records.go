package groupcoord

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// Record is one record of a __consumer_offsets partition, encoded as Kafka
// encodes it: Key starts with an int16 key version (0 or 1: an offset
// commit, 2: classic group metadata, 3 and 5-8: a KIP-848 consumer group's
// records, cgrecords.go, 10-14: a KIP-932 share group's, sharerecords.go),
// and a nil Value is a tombstone, which deletes what the key names.
type Record struct {
	Key, Value []byte
}

// Versions of the records the coordinator writes: the ones Kafka writes
// (GroupCoordinatorRecordHelpers), which every Kafka since 2.3 reads.
const (
	offsetKeyVersion   = 1
	offsetValueVersion = 3
	groupKeyVersion    = 2
	groupValueVersion  = 3
)

// Offset is a committed offset, as an OffsetCommitValue holds it.
type Offset struct {
	Offset          int64
	LeaderEpoch     int32 // -1 if the client gave none
	Metadata        string
	CommitTimestamp int64 // milliseconds since the epoch, the leader's clock
}

// GroupMetadata is a group's last stored state, as a GroupMetadataValue
// holds it: written when a generation becomes stable (with every member's
// subscription and assignment) and when the group becomes empty.
type GroupMetadata struct {
	ProtocolType   string
	Generation     int32
	Protocol       string // "" if none was selected (stored as null)
	Leader         string // "" if none (stored as null)
	StateTimestamp int64  // milliseconds since the epoch; -1 if unknown
	Members        []Member
}

// Member is one member of a stored generation. The byte slices are shared
// with the View and must not be modified.
type Member struct {
	ID               string
	InstanceID       *string // group.instance.id of a static member
	ClientID         string
	ClientHost       string
	RebalanceTimeout int32 // milliseconds
	SessionTimeout   int32 // milliseconds
	Subscription     []byte
	Assignment       []byte
}

// AppendOffsetKey appends the OffsetCommitKey (version 1) of a group,
// topic and partition.
func AppendOffsetKey(dst []byte, group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(dst)
}

// AppendOffsetValue appends the OffsetCommitValue (version 3) of o.
func AppendOffsetValue(dst []byte, o Offset) []byte {
	v := kmsg.OffsetCommitValue{
		Version:         offsetValueVersion,
		Offset:          o.Offset,
		LeaderEpoch:     o.LeaderEpoch,
		Metadata:        o.Metadata,
		CommitTimestamp: o.CommitTimestamp,
	}
	return v.AppendTo(dst)
}

// AppendGroupKey appends the GroupMetadataKey (version 2) of a group.
func AppendGroupKey(dst []byte, group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: group}
	return k.AppendTo(dst)
}

// AppendGroupValue appends the GroupMetadataValue (version 3) of md.
func AppendGroupValue(dst []byte, md *GroupMetadata) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = md.ProtocolType
	v.Generation = md.Generation
	v.Protocol = nullable(md.Protocol)
	v.Leader = nullable(md.Leader)
	v.CurrentStateTimestamp = md.StateTimestamp
	v.Members = make([]kmsg.GroupMetadataValueMember, len(md.Members))
	for i, m := range md.Members {
		vm := &v.Members[i]
		vm.MemberID = m.ID
		vm.InstanceID = m.InstanceID
		vm.ClientID = m.ClientID
		vm.ClientHost = m.ClientHost
		vm.RebalanceTimeoutMillis = m.RebalanceTimeout
		vm.SessionTimeoutMillis = m.SessionTimeout
		vm.Subscription = nonNil(m.Subscription)
		vm.Assignment = nonNil(m.Assignment)
	}
	return v.AppendTo(dst)
}

// OffsetRecord is the record that commits o for a group's partition.
func OffsetRecord(group, topic string, partition int32, o Offset) Record {
	return Record{
		Key:   AppendOffsetKey(nil, group, topic, partition),
		Value: AppendOffsetValue(nil, o),
	}
}

// OffsetTombstone is the record that deletes a group's committed offset of
// one partition.
func OffsetTombstone(group, topic string, partition int32) Record {
	return Record{Key: AppendOffsetKey(nil, group, topic, partition)}
}

// GroupRecord is the record that stores a group's metadata.
func GroupRecord(group string, md *GroupMetadata) Record {
	return Record{Key: AppendGroupKey(nil, group), Value: AppendGroupValue(nil, md)}
}

// GroupTombstone is the record that deletes a group's metadata (its
// offsets have tombstones of their own).
func GroupTombstone(group string) Record {
	return Record{Key: AppendGroupKey(nil, group)}
}

// AppendBatch appends one uncompressed v2 RecordBatch holding recs, stamped
// with timestampMillis, for the broker to store in the __consumer_offsets
// partition; ApplyBatch reads it back. It fails only for an empty recs.
func AppendBatch(dst []byte, recs []Record, timestampMillis int64) ([]byte, error) {
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{Timestamp: timestampMillis, Key: r.Key, Value: r.Value}
	}
	return record.AppendBatch(dst, record.PlainBatch(record.CompressionNone), rs)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// nonNil keeps an empty byte field empty rather than null on the wire
// (both encode the same for non-nullable bytes, but kmsg wants a slice).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// cloneMember copies a member with its own byte slices.
func cloneMember(m Member) Member {
	m.Subscription = slices.Clone(nonNil(m.Subscription))
	m.Assignment = slices.Clone(nonNil(m.Assignment))
	if m.InstanceID != nil {
		id := *m.InstanceID
		m.InstanceID = &id
	}
	return m
}
