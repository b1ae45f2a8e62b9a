package fsm

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/producerstate"
	"github.com/minikafka/minikafka-go/record"
)

// Appending producers' batches and transaction markers, checked against
// the producer table.

// applyProduce appends batch if its producer's sequence allows (only its
// epoch, for a coordinator's batch). A logAppendTime >= 0 is stamped into
// the batch first (on a copy: raft's entry bytes are shared).
func (f *FSM) applyProduce(batch []byte, term uint64, logAppendTime int64, coordinator bool) *ProduceResult {
	res := &ProduceResult{BaseOffset: -1, LogAppendTime: -1}
	h, err := record.CheckProduce(batch)
	if err != nil {
		res.Err = &Error{Code: kerr.CorruptMessage, Detail: err.Error()}
		return res
	}
	if logAppendTime >= 0 {
		batch = bytes.Clone(batch)
		record.SetLogAppendTime(batch, logAppendTime)
		h.Attributes |= record.AttrTimestampType
		h.MaxTimestamp, res.LogAppendTime = logAppendTime, logAppendTime
	}
	v := f.table.Validate(h)
	if coordinator {
		v = coordinatorVerdict(f.table, h)
	}
	switch v.Verdict {
	case producerstate.Append:
		base := f.log.EndOffset()
		if err := f.retry("append", func() error { return f.log.AppendAt(batch, base, int32(term)) }); err != nil {
			res.Err = err
			return res
		}
		h.BaseOffset = base
		f.table.Record(h)
		res.BaseOffset = base
		if f.obs != nil {
			f.obs.Appended(batch)
		}
	case producerstate.Duplicate:
		res.BaseOffset = v.Original.BaseOffset
		res.Duplicate = true
	case producerstate.TableFull:
		res.Err = &Error{Code: kerr.PolicyViolation,
			Detail: fmt.Sprintf("the partition's producer table holds its limit of %d producers; producer %d is refused until idle producers expire (producer.id.expiration.ms)", f.limit, h.ProducerID)}
	case producerstate.Fenced:
		res.Err = &Error{Code: kerr.InvalidProducerEpoch,
			Detail: fmt.Sprintf("producer %d epoch %d is older than the recorded epoch", h.ProducerID, h.ProducerEpoch)}
	case producerstate.TxnStateInvalid:
		res.Err = &Error{Code: kerr.InvalidTxnState,
			Detail: fmt.Sprintf("producer %d has a transaction open on the partition: expected a transactional batch", h.ProducerID)}
	default:
		res.Err = &Error{Code: kerr.OutOfOrderSequenceNumber,
			Detail: fmt.Sprintf("producer %d epoch %d: sequence %d, expected %d", h.ProducerID, h.ProducerEpoch, h.BaseSequence, v.Expected)}
	}
	res.LogStartOffset = f.log.StartOffset()
	return res
}

// coordinatorVerdict is Validate for a coordinator's batch: fenced if its
// epoch is older than the producer's, else appended (Record then ignores
// its sequence of -1).
func coordinatorVerdict(t *producerstate.Table, h record.Header) producerstate.Result {
	if e, ok := t.Lookup(h.ProducerID); ok && h.ProducerEpoch < e.Epoch {
		return producerstate.Result{Verdict: producerstate.Fenced, Epoch: e.Epoch}
	}
	return producerstate.Result{Verdict: producerstate.Append}
}

// applyEndTxn writes the marker m for its producer if the producer state
// allows (producerstate.Table.ValidateMarker): a control batch built here,
// stamped with the leader time m carries, so every replica writes the
// same bytes. The result's BaseOffset is the marker's offset.
func (f *FSM) applyEndTxn(m EndTxn, term uint64) *ProduceResult {
	res := &ProduceResult{BaseOffset: -1, LogAppendTime: -1}
	v := f.table.ValidateMarker(m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch)
	if m.V2 {
		v = f.table.ValidateMarkerV2(m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch)
	}
	switch v.Verdict {
	case producerstate.Append:
	case producerstate.CoordinatorFenced:
		res.Err = &Error{Code: kerr.TransactionCoordinatorFenced,
			Detail: fmt.Sprintf("producer %d: coordinator epoch %d is older than the recorded %d", m.ProducerID, m.CoordinatorEpoch, v.CoordinatorEpoch)}
		return res
	default:
		res.Err = &Error{Code: kerr.InvalidProducerEpoch,
			Detail: fmt.Sprintf("producer %d: marker epoch %d is older than the recorded epoch %d", m.ProducerID, m.ProducerEpoch, v.Epoch)}
		return res
	}
	typ := record.ControlAbort
	if m.Commit {
		typ = record.ControlCommit
	}
	batch := record.AppendEndTxnMarker(nil, m.ProducerID, m.ProducerEpoch, m.LeaderTime,
		record.EndTxnMarker{Type: typ, CoordinatorEpoch: m.CoordinatorEpoch})
	base := f.log.EndOffset()
	if err := f.retry("append marker", func() error { return f.log.AppendAt(batch, base, int32(term)) }); err != nil {
		res.Err = err
		return res
	}
	f.recordMarker(m.ProducerID, m.ProducerEpoch, base, m.LeaderTime, record.EndTxnMarker{Type: typ, CoordinatorEpoch: m.CoordinatorEpoch})
	if f.obs != nil {
		f.obs.Appended(batch)
	}
	res.BaseOffset, res.LogStartOffset = base, f.log.StartOffset()
	return res
}

// recordMarker records a written marker in the producer table.
func (f *FSM) recordMarker(pid int64, epoch int16, offset, ts int64, m record.EndTxnMarker) {
	ended := f.table.RecordMarker(producerstate.Marker{ProducerID: pid, Epoch: epoch,
		Commit: m.Type == record.ControlCommit, CoordinatorEpoch: m.CoordinatorEpoch, Offset: offset, Timestamp: ts})
	if ended && m.Type == record.ControlAbort {
		f.txnDirty = true
	}
}
