package groupcoord

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// TxnIDHeader is the header by which each record of a TxnOffsetCommit's
// batch names its transactional id (AppendTxnBatch): a __consumer_offsets
// record has no field for it, and the partition's leader needs it to ask
// the transaction's coordinator about a commit left pending (PendingTxns).
// Kafka's readers of the partition ignore record headers.
const TxnIDHeader = "minikafka.transactional.id"

// ApplyTxn applies one record of producerID's open transaction, from a
// batch of the producer's epoch: an offset commit (TxnOffsetCommit) stays
// pending until the producer's marker (Marker). Other records are refused
// as by Apply, leaving the view unchanged. Pending commits are not in
// snapshots (AppendSnapshot): the broker rebuilds the view from the log,
// which holds them with their markers.
func (v *View) ApplyTxn(producerID int64, epoch int16, r record.Record) error {
	key, value := r.Key, r.Value
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
	txnID := ""
	if i := slices.IndexFunc(r.Headers, func(h record.RecordHeader) bool { return h.Key == TxnIDHeader }); i >= 0 {
		txnID = string(r.Headers[i].Value)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	v.pending[producerID] = append(v.pending[producerID], pendingOffset{
		group: k.Group, tp: topicPartition{k.Topic, k.Partition}, seq: v.seq, epoch: epoch, txnID: txnID,
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

// PendingTxn is a producer's transaction with offset commits pending in
// the view.
type PendingTxn struct {
	ProducerID int64
	// ProducerEpoch is the newest epoch of its pending commits' batches.
	ProducerEpoch int16
	// TransactionalID is the one its newest commit named (TxnIDHeader);
	// "" if none named one (commits written before they were verified).
	TransactionalID string
	// Since is the commit timestamp of its oldest pending commit: the
	// clock of the leader that took it, in milliseconds.
	Since int64
}

// PendingTxns returns the transactions with offset commits pending, by
// producer id.
func (v *View) PendingTxns() []PendingTxn {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := make([]PendingTxn, 0, len(v.pending))
	for pid, ps := range v.pending {
		t := PendingTxn{ProducerID: pid, ProducerEpoch: ps[0].epoch, Since: ps[0].o.CommitTimestamp}
		for _, p := range ps {
			t.ProducerEpoch = max(t.ProducerEpoch, p.epoch)
			t.Since = min(t.Since, p.o.CommitTimestamp)
			if p.txnID != "" {
				t.TransactionalID = p.txnID
			}
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b PendingTxn) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}
