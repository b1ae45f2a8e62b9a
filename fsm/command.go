package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/minikafka/minikafka-go/internal/nozero"
)

// CmdType is the first byte of every command in a partition's Raft log.
// The enum only ever grows at the end: a command format, once shipped, is
// read forever.
type CmdType uint8

const (
	// cmdInvalid is never written; a zero byte means a corrupt entry.
	cmdInvalid CmdType = iota
	// CmdProduce carries one Kafka v2 RecordBatch exactly as the producer
	// sent it: [CmdProduce][batch bytes...]. The FSM assigns its offsets.
	CmdProduce
	// CmdNoop changes nothing but the applied index: [CmdNoop]. A new
	// leader proposes it to learn which entries are committed.
	CmdNoop
	// CmdProduceAt is CmdProduce with the leader's clock:
	// [CmdProduceAt][leader time ms i64][flags u8][batch bytes...]. With
	// FlagLogAppendTime the FSM stamps the leader time into the batch
	// (message.timestamp.type=LogAppendTime).
	CmdProduceAt
	// CmdTrim moves the log start offset up (retention, DeleteRecords):
	// [CmdTrim][offset i64]. The leader decides the offset.
	CmdTrim
	// CmdExpireProducers forgets producers idle for longer than ttl
	// (producer.id.expiration.ms) as of the leader's clock:
	// [CmdExpireProducers][now ms i64][ttl ms i64].
	CmdExpireProducers
	// CmdEndTxn writes a transaction marker (a COMMIT or ABORT control
	// batch) for a producer, as the transaction coordinator asks through
	// WriteTxnMarkers: [CmdEndTxn][producer id i64][producer epoch i16]
	// [coordinator epoch i32][flags u8: bit 0 commit (else abort), bit 1
	// a marker of transactions v2][leader time ms i64]. The FSM builds the
	// batch, stamped with the leader time. Builds before transactions v2
	// read only flags 0 and 1.
	CmdEndTxn
	// CmdClean cleans the log below an offset (cleanup.policy=compact):
	// [CmdClean][up to offset i64][leader time ms i64][delete.retention.ms
	// i64][dirty from i64][map bytes i64]. See clean.go. Builds before the
	// last two fields wrote and read only the first three.
	CmdClean
)

// Flags of a CmdProduceAt.
const (
	// FlagLogAppendTime stamps the leader time into the batch as its
	// LogAppendTime.
	FlagLogAppendTime byte = 1
	// FlagCoordinator marks a batch a coordinator writes for a producer
	// (a transactional offset commit: Kafka's AppendOrigin.COORDINATOR):
	// it carries no sequence (-1), so only its epoch is checked, and it
	// enters no producer window.
	FlagCoordinator byte = 2
)

func (c CmdType) String() string {
	switch c {
	case CmdProduce:
		return "produce"
	case CmdNoop:
		return "noop"
	case CmdProduceAt:
		return "produce-at"
	case CmdTrim:
		return "trim"
	case CmdExpireProducers:
		return "expire-producers"
	case CmdEndTxn:
		return "end-txn"
	case CmdClean:
		return "clean"
	}
	return fmt.Sprintf("cmd(%d)", uint8(c))
}

// ErrUnknownCommand means an entry's type byte is one this build does not
// know; it comes from a newer node or a corrupt log.
var ErrUnknownCommand = errors.New("fsm: unknown command type")

// ErrEmptyCommand means an entry with no bytes at all.
var ErrEmptyCommand = errors.New("fsm: empty command")

// ErrShortCommand means an entry too short (or long) for its type.
var ErrShortCommand = errors.New("fsm: malformed command")

// EncodeProduce returns the command that appends batch.
func EncodeProduce(batch []byte) []byte {
	cmd := nozero.Bytes(1 + len(batch)) // every byte is written below
	cmd[0] = byte(CmdProduce)
	copy(cmd[1:], batch)
	return cmd
}

// EncodeNoop returns the no-op command.
func EncodeNoop() []byte { return []byte{byte(CmdNoop)} }

// produceAtHeader is the bytes of a CmdProduceAt before the batch.
const produceAtHeader = 1 + 8 + 1

// EncodeProduceAt returns the command that appends batch at the leader
// time nowMs, with flags (FlagLogAppendTime).
func EncodeProduceAt(batch []byte, nowMs int64, flags byte) []byte {
	cmd := nozero.Bytes(produceAtHeader + len(batch)) // every byte is written below
	cmd[0] = byte(CmdProduceAt)
	binary.BigEndian.PutUint64(cmd[1:], uint64(nowMs))
	cmd[9] = flags
	copy(cmd[produceAtHeader:], batch)
	return cmd
}

// EncodeTrim returns the command that moves the log start offset up to
// offset.
func EncodeTrim(offset int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{byte(CmdTrim)}, uint64(offset))
}

// EncodeExpireProducers returns the command that forgets producers whose
// last batch's timestamp is older than nowMs - ttlMs.
func EncodeExpireProducers(nowMs, ttlMs int64) []byte {
	b := binary.BigEndian.AppendUint64([]byte{byte(CmdExpireProducers)}, uint64(nowMs))
	return binary.BigEndian.AppendUint64(b, uint64(ttlMs))
}

// EndTxn is the body of a CmdEndTxn.
type EndTxn struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool  // COMMIT, else ABORT
	LeaderTime       int64 // ms; the marker's timestamp
	// V2 marks a marker of transactions v2 (KIP-890 part 2), whose epoch
	// is the one its EndTxn bumped (producerstate ValidateMarkerV2).
	V2 bool
}

// Flags of a CmdEndTxn.
const (
	endTxnCommit = 1 << 0
	endTxnV2     = 1 << 1
)

// EncodeEndTxn returns the command that writes the marker m.
func EncodeEndTxn(m EndTxn) []byte {
	b := binary.BigEndian.AppendUint64([]byte{byte(CmdEndTxn)}, uint64(m.ProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(m.ProducerEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(m.CoordinatorEpoch))
	flags := byte(0)
	if m.Commit {
		flags |= endTxnCommit
	}
	if m.V2 {
		flags |= endTxnV2
	}
	b = append(b, flags)
	return binary.BigEndian.AppendUint64(b, uint64(m.LeaderTime))
}

// decodeEndTxn reads a CmdEndTxn body that DecodeCommand accepted.
func decodeEndTxn(body []byte) EndTxn {
	return EndTxn{
		ProducerID:       int64(binary.BigEndian.Uint64(body)),
		ProducerEpoch:    int16(binary.BigEndian.Uint16(body[8:])),
		CoordinatorEpoch: int32(binary.BigEndian.Uint32(body[10:])),
		Commit:           body[14]&endTxnCommit != 0,
		V2:               body[14]&endTxnV2 != 0,
		LeaderTime:       int64(binary.BigEndian.Uint64(body[15:])),
	}
}

// bodySize is the fixed body length of CmdTrim, CmdExpireProducers,
// CmdEndTxn and CmdClean.
func bodySize(t CmdType) int {
	switch t {
	case CmdExpireProducers:
		return 16
	case CmdEndTxn:
		return 8 + 2 + 4 + 1 + 8
	case CmdClean:
		return cleanBodySize
	}
	return 8
}

// cleanBodySize is CmdClean's body; an older build's is 24 bytes.
const cleanBodySize = 40

// DecodeCommand splits a command into its type and body. The body aliases
// data.
func DecodeCommand(data []byte) (CmdType, []byte, error) {
	if len(data) == 0 {
		return cmdInvalid, nil, ErrEmptyCommand
	}
	t := CmdType(data[0])
	switch t {
	case CmdProduce, CmdNoop:
		return t, data[1:], nil
	case CmdProduceAt:
		if len(data) < produceAtHeader {
			return t, nil, fmt.Errorf("%w: %s of %d bytes", ErrShortCommand, t, len(data))
		}
		return t, data[1:], nil
	case CmdTrim, CmdExpireProducers, CmdEndTxn, CmdClean:
		if len(data) != 1+bodySize(t) && !(t == CmdClean && len(data) == 1+24) || (t == CmdEndTxn && data[15] > endTxnCommit|endTxnV2) {
			return t, nil, fmt.Errorf("%w: %s of %d bytes", ErrShortCommand, t, len(data))
		}
		return t, data[1:], nil
	}
	return t, nil, fmt.Errorf("%w: %d", ErrUnknownCommand, data[0])
}
