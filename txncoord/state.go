package txncoord

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a transaction's state, with Kafka's numbering (the int8 of
// TransactionLogValue).
type State int8

// The states a transactional id goes through.
const (
	Empty          State = 0 // no transaction since InitProducerId
	Ongoing        State = 1 // partitions added, not ended
	PrepareCommit  State = 2 // EndTxn COMMIT accepted, markers being written
	PrepareAbort   State = 3 // EndTxn ABORT (or a timeout), markers being written
	CompleteCommit State = 4 // every COMMIT marker written
	CompleteAbort  State = 5 // every ABORT marker written
)

// String is Kafka's name of the state.
func (s State) String() string { return kmsg.TransactionState(s).String() }

// valid reports whether s is a state this coordinator writes.
func (s State) valid() bool { return s >= Empty && s <= CompleteAbort }

// TopicPartition names a partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func compareTP(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Metadata is one transactional id's stored state.
type Metadata struct {
	ProducerID    int64
	ProducerEpoch int16
	TimeoutMillis int32
	State         State
	// Partitions are the transaction's partitions, sorted; empty unless
	// Ongoing or Prepare*.
	Partitions []TopicPartition
	// LastUpdate and Start are the leader's clock in milliseconds when the
	// record was written and when the transaction began (-1 if none).
	LastUpdate int64
	Start      int64
	// TxnVersion is the transaction version the producer's client runs
	// (Kafka's ClientTransactionVersion): 2 for KIP-890 part 2, where
	// every EndTxn bumps the epoch and the markers carry the bumped one.
	TxnVersion int16
	// PrevProducerID is the producer id the transactional id had before
	// an epoch overflow gave it a new one; NextProducerID, in a Prepare
	// state of version 2, the new producer id the transactional id takes
	// (with epoch 0) when the transaction completes, because the bumped
	// epoch is the last there is. 0 is none (-1 in the record).
	PrevProducerID, NextProducerID int64
}

// clone returns a copy of m that shares nothing with it.
func (m Metadata) clone() Metadata {
	m.Partitions = slices.Clone(m.Partitions)
	return m
}

// has reports whether the transaction includes tp.
func (m *Metadata) has(tp TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(m.Partitions, tp, compareTP)
	return ok
}

// Record is one record of a __transaction_state partition, encoded as
// Kafka encodes it; a nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Versions of the records the coordinator writes: Kafka's version 0 key
// and value, which every Kafka reads, and version 1 of the value (Kafka
// 4.0's, with the transaction version and the previous and next producer
// ids as tagged fields) when one of those is set.
const (
	keyVersion     = 0
	valueVersion   = 0
	valueVersionV2 = 1
)

// MetadataRecord is the record that stores a transactional id's metadata.
func MetadataRecord(id string, m Metadata) Record {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	if m.TxnVersion != 0 || m.PrevProducerID > 0 || m.NextProducerID > 0 {
		v.Version = valueVersionV2
		v.ClientTransactionVersion = m.TxnVersion
		v.PreviousProducerID, v.NextProducerID = max(m.PrevProducerID, -1), max(m.NextProducerID, -1)
	}
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.ProducerID, m.ProducerEpoch, m.TimeoutMillis
	v.State = kmsg.TransactionState(m.State)
	v.LastUpdateTimestamp, v.StartTimestamp = m.LastUpdate, m.Start
	for _, tp := range m.Partitions {
		if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
			v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	return Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// decodeValue reads a TransactionLogValue (versions 0 and 1).
func decodeValue(value []byte) (Metadata, error) {
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(value); err != nil {
		return Metadata{}, &RecordError{Reason: "transaction metadata value", Err: err}
	}
	if v.Version < 0 || v.Version > 1 {
		return Metadata{}, &RecordError{Reason: "transaction metadata value version " + itoa(int64(v.Version))}
	}
	m := Metadata{ProducerID: v.ProducerID, ProducerEpoch: v.ProducerEpoch, TimeoutMillis: v.TimeoutMillis,
		State: State(v.State), LastUpdate: v.LastUpdateTimestamp, Start: v.StartTimestamp,
		TxnVersion: v.ClientTransactionVersion, PrevProducerID: max(v.PreviousProducerID, 0), NextProducerID: max(v.NextProducerID, 0)}
	if !m.State.valid() {
		return Metadata{}, &RecordError{Reason: "transaction state " + itoa(int64(v.State))}
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.Partitions = append(m.Partitions, TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	slices.SortFunc(m.Partitions, compareTP)
	m.Partitions = slices.Compact(m.Partitions)
	return m, nil
}
