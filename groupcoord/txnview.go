package groupcoord

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApplyTxn applies one record of producerID's open transaction: an offset
// commit (TxnOffsetCommit) stays pending until the producer's marker
// (Marker). Other records are refused as by Apply, leaving the view
// unchanged. Pending commits are not in snapshots (AppendSnapshot): the
// broker rebuilds the view from the log, which holds them with their
// markers.
func (v *View) ApplyTxn(producerID int64, key, value []byte) error {
	if len(key) < 2 {
		return &RecordError{Reason: fmt.Sprintf("key of %d bytes", len(key))}
	}
	if version := int16(binary.BigEndian.Uint16(key)); version != 0 && version != 1 {
		return &RecordError{Reason: fmt.Sprintf("transactional record with key version %d", version), unknown: version > 1}
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return &RecordError{Reason: "offset commit key", Err: err}
	}
	var val kmsg.OffsetCommitValue
	if value == nil {
		return &RecordError{Reason: "transactional offset tombstone"}
	}
	if err := val.ReadFrom(value); err != nil {
		return &RecordError{Reason: "offset commit value", Err: err}
	}
	if val.Version < 3 {
		val.LeaderEpoch = -1
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	v.pending[producerID] = append(v.pending[producerID], pendingOffset{
		group: k.Group, tp: topicPartition{k.Topic, k.Partition}, seq: v.seq,
		o: Offset{Offset: val.Offset, LeaderEpoch: val.LeaderEpoch, Metadata: val.Metadata, CommitTimestamp: val.CommitTimestamp},
	})
	return nil
}

// Marker ends producerID's transaction: on COMMIT its pending offset
// commits become committed offsets, in log order, except where an offset
// was committed after them (a later record wins, as in Kafka); on ABORT
// they are dropped.
func (v *View) Marker(producerID int64, commit bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if commit {
		for _, p := range v.pending[producerID] {
			g := v.group(p.group)
			if s, ok := g.seqs[p.tp]; ok && s > p.seq {
				continue
			}
			g.offsets[p.tp], g.seqs[p.tp] = p.o, p.seq
		}
	}
	delete(v.pending, producerID)
}

// Pending reports whether a transaction has a pending offset commit for a
// group's partition (OffsetFetch with require_stable answers
// UNSTABLE_OFFSET_COMMIT then).
func (v *View) Pending(group, topic string, partition int32) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	tp := topicPartition{topic, partition}
	for _, ps := range v.pending {
		for _, p := range ps {
			if p.group == group && p.tp == tp {
				return true
			}
		}
	}
	return false
}
