// Package record is a read-and-patch view of Kafka v2 RecordBatch bytes.
//
// The broker stores batches exactly as producers sent them. It only ever
// reads the 61-byte header, checks the CRC32C, and rewrites two fields that
// the CRC does not cover: the base offset (bytes 0–7) and the partition
// leader epoch (bytes 12–15). Records inside a batch are never decoded on the
// broker's hot path.
//
// Layout of the header (big endian):
//
//	 0 baseOffset           int64
//	 8 batchLength          int32  (bytes after this field)
//	12 partitionLeaderEpoch int32
//	16 magic                int8   (2)
//	17 crc                  uint32 (CRC32C of bytes 21..end)
//	21 attributes           int16
//	23 lastOffsetDelta      int32
//	27 firstTimestamp       int64
//	35 maxTimestamp         int64
//	43 producerId           int64
//	51 producerEpoch        int16
//	53 baseSequence         int32
//	57 recordCount          int32
//	61 records...
package record

import (
	"encoding/binary"
	"hash/crc32"
	"iter"
	"math"
)

// Sizes and positions in the v2 batch header.
const (
	HeaderSize = 61 // bytes before the first record
	// LogOverhead is the part of a batch not counted by batchLength.
	LogOverhead = 12
	// MinBatchSize is the smallest batch with zero records.
	MinBatchSize = HeaderSize

	offBaseOffset  = 0
	offLength      = 8
	offLeaderEpoch = 12
	offMagic       = 16
	offCRC         = 17
	offAttributes  = 21
	offLastDelta   = 23
	offFirstTS     = 27
	offMaxTS       = 35
	offProducerID  = 43
	offEpoch       = 51
	offBaseSeq     = 53
	offCount       = 57
)

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	// AttrDeleteHorizon (KIP-534): the log cleaner has set the batch's
	// delete horizon, kept in its first timestamp field (the records'
	// timestamp deltas are relative to it).
	AttrDeleteHorizon = 0x40
)

// Compression codecs in the low three attribute bits.
const (
	CompressionNone   = 0
	CompressionGzip   = 1
	CompressionSnappy = 2
	CompressionLZ4    = 3
	CompressionZstd   = 4
)

// Values that mean "not set" in producer fields.
const (
	NoProducerID    int64 = -1
	NoProducerEpoch int16 = -1
	NoSequence      int32 = -1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the decoded fixed part of a v2 RecordBatch.
type Header struct {
	BaseOffset           int64
	Length               int32 // batchLength: bytes after the length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the whole batch's size in bytes, header included.
func (h Header) Size() int { return int(h.Length) + LogOverhead }

// Count is the number of offsets the batch occupies.
func (h Header) Count() int32 { return h.LastOffsetDelta + 1 }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset just past the batch.
func (h Header) NextOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) + 1 }

// Compression is the codec of the records section.
func (h Header) Compression() int { return int(h.Attributes & AttrCompressionMask) }

// IsControl reports whether this is a transaction marker batch.
func (h Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// DeleteHorizon is when the cleaner may remove the batch's tombstones
// (ms since the epoch); ok is false when no cleaning has set it.
func (h Header) DeleteHorizon() (ms int64, ok bool) {
	return h.FirstTimestamp, h.Attributes&AttrDeleteHorizon != 0
}

// IsTransactional reports whether the batch belongs to a transaction.
func (h Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// Idempotent reports whether the batch carries a producer identity.
func (h Header) Idempotent() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence number of the batch's last record.
func (h Header) LastSequence() int32 {
	if h.BaseSequence == NoSequence {
		return NoSequence
	}
	return AddSequence(h.BaseSequence, h.LastOffsetDelta)
}

// AddSequence returns seq+n where sequences wrap from MaxInt32 to 0, as
// Kafka's producer does.
func AddSequence(seq, n int32) int32 {
	if n < 0 {
		panic("record: negative sequence increment")
	}
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// NextSequence is the sequence that directly follows seq.
func NextSequence(seq int32) int32 { return AddSequence(seq, 1) }

// ParseHeader decodes the fixed header of the batch at the start of b and
// checks what can be checked without the CRC: the buffer holds at least the
// header, the magic byte is 2, and the record count agrees with the last
// offset delta. b may hold more bytes than one batch (it may be a log).
// Use Check to also verify the length and the CRC of a single batch.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, ErrShortBuffer
	}
	h := Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastDelta:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(b[offFirstTS:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTS:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSeq:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[offCount:])),
	}
	if h.Magic != 2 {
		return h, &MagicError{Magic: h.Magic}
	}
	if h.Length < HeaderSize-LogOverhead {
		return h, &LengthError{Length: h.Length, Have: len(b) - LogOverhead}
	}
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 || h.NumRecords > h.LastOffsetDelta+1 {
		// Fewer records than offsets is a batch the log cleaner rewrote
		// (Filter); more is never valid.
		return h, &CountError{NumRecords: h.NumRecords, LastOffsetDelta: h.LastOffsetDelta}
	}
	return h, nil
}

// Check verifies that b is exactly one whole, intact batch: its header
// parses, its length field covers exactly len(b), and its CRC32C matches.
func Check(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		return h, &LengthError{Length: h.Length, Have: len(b) - LogOverhead}
	}
	if got := crc32.Checksum(b[offAttributes:], castagnoli); got != h.CRC {
		return h, &CRCError{Want: h.CRC, Got: got}
	}
	return h, nil
}

// CheckProduce is Check plus the rules for a batch arriving from a
// producer: one record per offset (Kafka's producer always writes
// lastOffsetDelta = count-1; only the cleaner leaves gaps), and no control
// batch (the broker writes those).
func CheckProduce(b []byte) (Header, error) {
	h, err := Check(b)
	if err != nil {
		return h, err
	}
	if h.NumRecords != h.LastOffsetDelta+1 {
		return h, &CountError{NumRecords: h.NumRecords, LastOffsetDelta: h.LastOffsetDelta}
	}
	if h.IsControl() {
		return h, ErrControlBatch
	}
	return h, nil
}

// Next splits the first whole batch off a byte stream of batches. It checks
// the header and that the buffer holds the whole batch, but not the CRC.
func Next(b []byte) (batch, rest []byte, h Header, err error) {
	h, err = ParseHeader(b)
	if err != nil {
		return nil, b, h, err
	}
	n := h.Size()
	if n > len(b) {
		return nil, b, h, &LengthError{Length: h.Length, Have: len(b) - LogOverhead}
	}
	return b[:n], b[n:], h, nil
}

// Batches walks the batches of log, a run of whole batches (Next on each),
// stopping at the first error.
func Batches(log []byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for rest := log; len(rest) > 0; {
			b, next, _, err := Next(rest)
			if !yield(b, err) || err != nil {
				return
			}
			rest = next
		}
	}
}

// SetBaseOffset rewrites the base offset in place. The CRC stays valid.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetLeaderEpoch rewrites the partition leader epoch in place. The CRC stays
// valid.
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// ComputeCRC returns the CRC32C the batch in b should carry.
func ComputeCRC(b []byte) uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// FinishBatch writes the length and CRC fields of a batch whose other fields
// and records are already in b. Builders call it last.
func FinishBatch(b []byte) {
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[offCRC:], ComputeCRC(b))
}

// SetLogAppendTime marks the batch's timestamps as the broker's
// (LogAppendTime) and sets its max timestamp to ts, as Kafka does for a
// topic with message.timestamp.type=LogAppendTime; readers take ts as
// every record's timestamp. It rewrites the CRC.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | AttrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTS:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], ComputeCRC(b))
}
