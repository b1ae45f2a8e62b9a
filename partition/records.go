package partition

import (
	"fmt"
	"log/slog"

	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

// RecordSink receives every record a replica's log holds, in log order: the
// whole log when the replica opens and again after a snapshot replaced it
// (each time after Reset), and then each applied batch's records. An
// internal topic keeps its materialised view this way (the consumer-offsets
// view of a group coordinator, say). It is called on the replica's FSM
// goroutine, or before raft starts, never concurrently.
type RecordSink interface {
	// Reset forgets everything received so far.
	Reset()
	// Record is one record; a nil value is Kafka's null (a tombstone).
	Record(key, value []byte)
}

// TxnRecordSink is a RecordSink that follows transactions too (the
// consumer-offsets view keeps transactional offset commits pending until
// their marker): the records of transactional batches go to TxnRecord
// instead of Record, and each transaction marker to Marker.
type TxnRecordSink interface {
	RecordSink
	// TxnRecord is a record, with its headers, of producerID's open
	// transaction, from a batch of the producer's epoch. r's slices are
	// valid only during the call.
	TxnRecord(producerID int64, epoch int16, r record.Record)
	// Marker ends producerID's transaction: COMMIT if commit, else ABORT.
	Marker(producerID int64, commit bool)
}

// recordFeeder feeds a RecordSink from the FSM (as its fsm.Observer) and
// from the log.
type recordFeeder struct {
	sink    RecordSink
	log     *seglog.Log
	logger  *slog.Logger
	scratch []record.Record
}

// Appended implements fsm.Observer.
func (f *recordFeeder) Appended(batch []byte) {
	if err := f.feed(batch); err != nil {
		f.logger.Error("could not read an appended batch's records", "err", err)
	}
}

// Restored implements fsm.Observer: the log was replaced.
func (f *recordFeeder) Restored() {
	if err := f.rebuild(); err != nil {
		f.logger.Error("could not rebuild the records' view after a restore", "err", err)
	}
}

// rebuild resets the sink and feeds it the whole log.
func (f *recordFeeder) rebuild() error {
	f.sink.Reset()
	for off, end := f.log.StartOffset(), f.log.EndOffset(); off < end; {
		b, err := f.log.Read(off, 1<<20)
		if err != nil {
			return fmt.Errorf("partition: read offset %d: %w", off, err)
		}
		for len(b) > 0 {
			batch, rest, h, err := record.Next(b)
			if err != nil {
				return fmt.Errorf("partition: batch at offset %d: %w", off, err)
			}
			if err := f.feed(batch); err != nil {
				return err
			}
			off, b = h.NextOffset(), rest
		}
	}
	return nil
}

// feed passes one batch's records to the sink, and a marker to a
// TxnRecordSink; other control batches carry no records for it.
func (f *recordFeeder) feed(batch []byte) error {
	h, err := record.ParseHeader(batch)
	if err != nil {
		return err
	}
	txn, isTxn := f.sink.(TxnRecordSink)
	if h.IsControl() {
		if !isTxn {
			return nil
		}
		m, err := record.ParseEndTxnMarker(batch)
		if err != nil {
			return fmt.Errorf("partition: marker: %w", err)
		}
		txn.Marker(h.ProducerID, m.Type == record.ControlCommit)
		return nil
	}
	f.scratch, err = record.AppendRecords(f.scratch[:0], batch)
	if err != nil {
		return fmt.Errorf("partition: records: %w", err)
	}
	for _, r := range f.scratch {
		if isTxn && h.IsTransactional() {
			txn.TxnRecord(h.ProducerID, h.ProducerEpoch, r)
		} else {
			f.sink.Record(r.Key, r.Value)
		}
	}
	clear(f.scratch)
	return nil
}
