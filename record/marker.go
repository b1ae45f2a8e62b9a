package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ControlType is the type of a control record (Kafka's ControlRecordType),
// the second int16 of its key.
type ControlType int16

// Control record types of transaction markers.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

func (c ControlType) String() string {
	switch c {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("control(%d)", int16(c))
}

// EndTxnMarker is the record of a transaction marker batch (Kafka's
// EndTransactionMarker): key version 0 and the type, value version 0 and
// the epoch of the coordinator that wrote it.
type EndTxnMarker struct {
	Type             ControlType
	CoordinatorEpoch int32
}

// ErrNotMarker means a batch is not a well-formed transaction marker.
var ErrNotMarker = errors.New("record: not a transaction marker batch")

// AppendEndTxnMarker appends the control batch that ends producer pid's
// transaction, as Kafka's broker writes it: transactional and control
// attributes, no compression, sequence -1, one record stamped ts (the
// leader's clock) whose key is (0, type) and value (0, coordinator
// epoch). Base offset 0 and leader epoch -1 are for the log to set.
func AppendEndTxnMarker(dst []byte, pid int64, epoch int16, ts int64, m EndTxnMarker) []byte {
	key := binary.BigEndian.AppendUint16([]byte{0, 0}, uint16(m.Type))
	value := binary.BigEndian.AppendUint32([]byte{0, 0}, uint32(m.CoordinatorEpoch))
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	h := dst[start:]
	binary.BigEndian.PutUint32(h[offLeaderEpoch:], math.MaxUint32) // -1
	h[offMagic] = 2
	binary.BigEndian.PutUint16(h[offAttributes:], uint16(AttrTransactional|AttrControl))
	binary.BigEndian.PutUint64(h[offFirstTS:], uint64(ts))
	binary.BigEndian.PutUint64(h[offMaxTS:], uint64(ts))
	binary.BigEndian.PutUint64(h[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(h[offEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(h[offBaseSeq:], math.MaxUint32) // -1
	binary.BigEndian.PutUint32(h[offCount:], 1)
	dst = appendRecords(dst, ts, []Record{{Timestamp: ts, Key: key, Value: value}})
	FinishBatch(dst[start:])
	return dst
}

// ParseEndTxnMarker reads the marker of a control batch b (one whole
// batch, as the log holds it). Like Kafka, it accepts a value version
// above 0 as long as the coordinator epoch is there.
func ParseEndTxnMarker(b []byte) (EndTxnMarker, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return EndTxnMarker{}, err
	}
	if !h.IsControl() {
		return EndTxnMarker{}, fmt.Errorf("%w: attributes %#x", ErrNotMarker, h.Attributes)
	}
	recs, err := AppendRecords(nil, b)
	if err != nil {
		return EndTxnMarker{}, fmt.Errorf("%w: %w", ErrNotMarker, err)
	}
	if len(recs) == 0 || len(recs[0].Key) < 4 || len(recs[0].Value) < 6 {
		return EndTxnMarker{}, fmt.Errorf("%w: no marker record", ErrNotMarker)
	}
	key, value := recs[0].Key, recs[0].Value
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 {
		return EndTxnMarker{}, fmt.Errorf("%w: control key version %d", ErrNotMarker, v)
	}
	m := EndTxnMarker{
		Type:             ControlType(binary.BigEndian.Uint16(key[2:])),
		CoordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:])),
	}
	if m.Type != ControlAbort && m.Type != ControlCommit {
		return EndTxnMarker{}, fmt.Errorf("%w: control type %d", ErrNotMarker, m.Type)
	}
	return m, nil
}
