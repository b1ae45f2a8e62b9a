package record

import (
	"encoding/binary"
	"errors"
	"math"
	"sync"
)

// BatchOptions are the batch-level fields a producer chooses.
type BatchOptions struct {
	// ProducerID, ProducerEpoch and BaseSequence identify an idempotent
	// producer's batch. A plain producer uses NoProducerID, NoProducerEpoch
	// and NoSequence; PlainBatch returns such options.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// Compression is one of the Compression* codecs.
	Compression int
	// Transactional sets the transactional attribute bit.
	Transactional bool
}

// PlainBatch returns the options of a non-idempotent producer's batch.
func PlainBatch(codec int) BatchOptions {
	return BatchOptions{ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch, BaseSequence: NoSequence, Compression: codec}
}

// ErrNoRecords means AppendBatch was given no records: a batch needs at
// least one.
var ErrNoRecords = errors.New("record: a batch needs at least one record")

// ErrTooManyRecords means the records do not fit the batch's int32 fields.
var ErrTooManyRecords = errors.New("record: too many records for one batch")

// scratch holds uncompressed records sections while they are compressed.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// AppendBatch appends one v2 RecordBatch holding recs, in order, to dst and
// returns the extended slice. The base offset is 0 and the partition leader
// epoch -1 (the broker sets both); the first timestamp is recs[0]'s, the max
// timestamp the largest; offset deltas are 0..len(recs)-1. Length and CRC are
// filled with FinishBatch, so the result passes Check.
func AppendBatch(dst []byte, opts BatchOptions, recs []Record) ([]byte, error) {
	if len(recs) == 0 {
		return dst, ErrNoRecords
	}
	if len(recs) > math.MaxInt32 {
		return dst, ErrTooManyRecords
	}
	if opts.Compression < CompressionNone || opts.Compression > CompressionZstd {
		return dst, &CodecError{Codec: opts.Compression}
	}
	first := recs[0].Timestamp
	maxTS := first
	for _, r := range recs[1:] {
		maxTS = max(maxTS, r.Timestamp)
	}
	attrs := int16(opts.Compression)
	if opts.Transactional {
		attrs |= AttrTransactional
	}

	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	h := dst[start:]
	binary.BigEndian.PutUint64(h[offBaseOffset:], 0)
	binary.BigEndian.PutUint32(h[offLeaderEpoch:], math.MaxUint32) // -1
	h[offMagic] = 2
	binary.BigEndian.PutUint16(h[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(h[offLastDelta:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(h[offFirstTS:], uint64(first))
	binary.BigEndian.PutUint64(h[offMaxTS:], uint64(maxTS))
	binary.BigEndian.PutUint64(h[offProducerID:], uint64(opts.ProducerID))
	binary.BigEndian.PutUint16(h[offEpoch:], uint16(opts.ProducerEpoch))
	binary.BigEndian.PutUint32(h[offBaseSeq:], uint32(opts.BaseSequence))
	binary.BigEndian.PutUint32(h[offCount:], uint32(len(recs)))

	if opts.Compression == CompressionNone {
		dst = appendRecords(dst, first, recs)
	} else {
		sp := scratch.Get().(*[]byte)
		raw := appendRecords((*sp)[:0], first, recs)
		var err error
		dst, err = Compress(dst, opts.Compression, raw)
		*sp = raw[:0]
		scratch.Put(sp)
		if err != nil {
			return dst[:start], err
		}
	}
	FinishBatch(dst[start:])
	return dst, nil
}

// appendRecords appends the uncompressed records section.
func appendRecords(dst []byte, firstTS int64, recs []Record) []byte {
	for i := range recs {
		r := &recs[i]
		tsDelta := r.Timestamp - firstTS
		n := 1 + varlongLen(tsDelta) + varlongLen(int64(i)) + bytesLen(r.Key) + bytesLen(r.Value) + varlongLen(int64(len(r.Headers)))
		for _, hd := range r.Headers {
			n += varlongLen(int64(len(hd.Key))) + len(hd.Key) + bytesLen(hd.Value)
		}
		dst = binary.AppendVarint(dst, int64(n))
		dst = append(dst, 0) // attributes
		dst = binary.AppendVarint(dst, tsDelta)
		dst = binary.AppendVarint(dst, int64(i))
		dst = appendBytes(dst, r.Key)
		dst = appendBytes(dst, r.Value)
		dst = binary.AppendVarint(dst, int64(len(r.Headers)))
		for _, hd := range r.Headers {
			dst = binary.AppendVarint(dst, int64(len(hd.Key)))
			dst = append(dst, hd.Key...)
			dst = appendBytes(dst, hd.Value)
		}
	}
	return dst
}

// appendBytes writes a varint length (-1 for nil) and the bytes.
func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varlongLen(int64(len(b))) + len(b)
}

// varlongLen is the size of v as a zigzag varint.
func varlongLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
