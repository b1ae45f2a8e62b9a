package sharepart

import (
	"encoding/base64"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Key names a share partition: its group, topic id and partition.
type Key struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// String is Kafka's share-coordinator key, "group:topicId:partition",
// with the topic id in Kafka's form (base64url without padding). Its Java
// hash picks the key's __share_group_state partition
// (metadata.GroupPartition), as Kafka's does, so tools that compute it
// find the same one.
func (k Key) String() string {
	return fmt.Sprintf("%s:%s:%d", k.Group, base64.RawURLEncoding.EncodeToString(k.TopicID[:]), k.Partition)
}

// Snapshot is a share partition's persisted state.
type Snapshot struct {
	// StateEpoch grows each time the state is re-initialised (an offset
	// reset by AlterShareGroupOffsets or DeleteShareGroupOffsets).
	StateEpoch int32
	// LeaderEpoch is the data partition's leader epoch that wrote it.
	LeaderEpoch int32
	StartOffset int64
	// Batches cover [StartOffset, SPEO) in order, without gaps.
	Batches []Batch
}

// DeliveryComplete is Kafka's delivery complete count (KIP-1226): the
// offsets at or past the start offset whose delivery is over, Acknowledged
// or Archived. A share partition's lag is the high watermark less the
// start offset less this count.
func (s Snapshot) DeliveryComplete() int64 {
	var n int64
	for _, b := range s.Batches {
		if b.State != Acknowledged && b.State != Archived {
			continue
		}
		if first := max(b.First, s.StartOffset); b.Last >= first {
			n += b.Last - first + 1
		}
	}
	return n
}

// Batch is a run of offsets with one state and delivery count.
type Batch struct {
	First, Last   int64
	State         RecordState
	DeliveryCount int16
}

// Record versions: a format, once written, is read forever.
const (
	keyVersion   int16 = 0
	valueVersion int16 = 0
	// batchBytes is one encoded Batch.
	batchBytes = 8 + 8 + 1 + 2
)

// EncodeKey is the record key of k in __share_group_state.
func EncodeKey(k Key) []byte {
	b := kbin.AppendInt16(nil, keyVersion)
	b = kbin.AppendString(b, k.Group)
	b = kbin.AppendUuid(b, k.TopicID)
	return kbin.AppendInt32(b, k.Partition)
}

// DecodeKey reads a key EncodeKey wrote.
func DecodeKey(b []byte) (Key, error) {
	r := kbin.Reader{Src: b}
	if v := r.Int16(); v != keyVersion {
		return Key{}, fmt.Errorf("%w: key version %d", ErrCorrupt, v)
	}
	k := Key{Group: r.String(), TopicID: r.Uuid(), Partition: r.Int32()}
	if err := r.Complete(); err != nil {
		return Key{}, fmt.Errorf("%w: key: %w", ErrCorrupt, err)
	}
	return k, nil
}

// EncodeValue is the record value of s.
func EncodeValue(s Snapshot) []byte {
	b := make([]byte, 0, 2+4+4+8+4+batchBytes*len(s.Batches))
	b = kbin.AppendInt16(b, valueVersion)
	b = kbin.AppendInt32(b, s.StateEpoch)
	b = kbin.AppendInt32(b, s.LeaderEpoch)
	b = kbin.AppendInt64(b, s.StartOffset)
	b = kbin.AppendInt32(b, int32(len(s.Batches)))
	for _, bt := range s.Batches {
		b = kbin.AppendInt64(b, bt.First)
		b = kbin.AppendInt64(b, bt.Last)
		b = kbin.AppendInt8(b, int8(bt.State))
		b = kbin.AppendInt16(b, bt.DeliveryCount)
	}
	return b
}

// DecodeValue reads a value EncodeValue wrote; its batch count is checked
// against the bytes before anything is allocated.
func DecodeValue(b []byte) (Snapshot, error) {
	r := kbin.Reader{Src: b}
	if v := r.Int16(); v != valueVersion {
		return Snapshot{}, fmt.Errorf("%w: value version %d", ErrCorrupt, v)
	}
	s := Snapshot{StateEpoch: r.Int32(), LeaderEpoch: r.Int32(), StartOffset: r.Int64()}
	n := r.Int32()
	if n < 0 || int(n)*batchBytes != len(r.Src) {
		return Snapshot{}, fmt.Errorf("%w: %d batches in %d bytes", ErrCorrupt, n, len(r.Src))
	}
	s.Batches = make([]Batch, n)
	for i := range s.Batches {
		s.Batches[i] = Batch{First: r.Int64(), Last: r.Int64(), State: RecordState(r.Int8()), DeliveryCount: r.Int16()}
	}
	if err := r.Complete(); err != nil {
		return Snapshot{}, fmt.Errorf("%w: value: %w", ErrCorrupt, err)
	}
	return s, nil
}
