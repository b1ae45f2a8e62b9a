package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Filter rewrites the single batch b keeping only the records keep accepts,
// in order, and appends the result to dst, as Kafka's log cleaner rewrites
// a batch: the kept records' bytes are copied unchanged (their offset and
// timestamp deltas with them), the batch is compressed again with its
// codec, and every header field but the length, CRC and record count stays
// as it was: base offset, last offset delta (so the offsets after the batch
// and an idempotent producer's last sequence do not move), leader epoch,
// attributes, first and max timestamps, producer id, epoch and base
// sequence. With no record kept the result is a batch of none, which a
// cleaner keeps only where the producer's sequence needs it. b must be
// whole and valid (Check).
func Filter(dst, b []byte, keep func(Record) bool) (out []byte, kept int, err error) {
	h, err := ParseHeader(b)
	if err != nil {
		return dst, 0, err
	}
	if h.Size() > len(b) {
		return dst, 0, &LengthError{Length: h.Length, Have: len(b) - LogOverhead}
	}
	body := b[HeaderSize:h.Size()]
	codec := h.Compression()
	if codec != CompressionNone {
		if body, err = Decompress(nil, codec, body); err != nil {
			return dst, 0, err
		}
	}
	var raw []byte
	for i := 0; i < int(h.NumRecords); i++ {
		r, n, err := decodeRecord(body, h)
		if err != nil {
			re := err.(*RecordError)
			re.Index = i
			return dst, 0, re
		}
		if keep(r) {
			raw = append(raw, body[:n]...)
			kept++
		}
		body = body[n:]
	}
	if len(body) != 0 {
		return dst, 0, &RecordError{Index: int(h.NumRecords), Reason: fmt.Sprintf("%d bytes after the last record", len(body))}
	}
	start := len(dst)
	dst = append(dst, b[:HeaderSize]...)
	binary.BigEndian.PutUint32(dst[start+offCount:], uint32(kept))
	if codec == CompressionNone || kept == 0 {
		dst = append(dst, raw...)
	} else if dst, err = Compress(dst, codec, raw); err != nil {
		return dst[:start], 0, err
	}
	FinishBatch(dst[start:])
	return dst, kept, nil
}

// AppendGap appends batches of no records that together span the offsets
// [base, next): what a log cleaner leaves where whole batches went, so
// that a log stays one contiguous run of offsets and a reader asked for a
// removed offset moves past it. Each is at most math.MaxInt32 offsets
// long; leaderEpoch and ts (first and max timestamp) are those of the last
// batch removed. No producer, no attributes.
func AppendGap(dst []byte, base, next int64, leaderEpoch int32, ts int64) []byte {
	for base < next {
		n := min(next-base, math.MaxInt32)
		start := len(dst)
		dst = append(dst, make([]byte, HeaderSize)...)
		h := dst[start:]
		binary.BigEndian.PutUint64(h[offBaseOffset:], uint64(base))
		binary.BigEndian.PutUint32(h[offLeaderEpoch:], uint32(leaderEpoch))
		h[offMagic] = 2
		binary.BigEndian.PutUint32(h[offLastDelta:], uint32(n-1))
		binary.BigEndian.PutUint64(h[offFirstTS:], uint64(ts))
		binary.BigEndian.PutUint64(h[offMaxTS:], uint64(ts))
		pid, epoch, seq := int64(NoProducerID), int16(NoProducerEpoch), int32(NoSequence)
		binary.BigEndian.PutUint64(h[offProducerID:], uint64(pid))
		binary.BigEndian.PutUint16(h[offEpoch:], uint16(epoch))
		binary.BigEndian.PutUint32(h[offBaseSeq:], uint32(seq))
		FinishBatch(h)
		base += n
	}
	return dst
}
