package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// FilterOptions say what Filter keeps of a batch.
type FilterOptions struct {
	// Keep reports whether a record stays.
	Keep func(Record) bool
	// DeleteHorizon, when at least 0, is set as the batch's delete horizon
	// (KIP-534) if the batch has none and keeps a tombstone (a record
	// with a null value): the first timestamp field takes it, with the
	// AttrDeleteHorizon bit, and the kept records' timestamp deltas are
	// rewritten to stay relative to it, so every record keeps its time.
	DeleteHorizon int64
	// HorizonAlways sets the delete horizon even without a tombstone kept:
	// the marker of a transaction that has no record left goes once its
	// horizon passes, as a tombstone does.
	HorizonAlways bool
}

// Filter rewrites the single batch b keeping only the records o.Keep
// accepts, in order, and appends the result to dst, as Kafka's log cleaner
// rewrites a batch: the kept records' bytes are copied unchanged (their
// offset and timestamp deltas with them) unless a delete horizon is set,
// the batch is compressed again with its codec, and every header field but
// the length, CRC and record count stays as it was: base offset, last
// offset delta (so the offsets after the batch and an idempotent
// producer's last sequence do not move), leader epoch, attributes, first
// and max timestamps, producer id, epoch and base sequence. With no record
// kept the result is a batch of none, which a cleaner keeps only where the
// producer's sequence needs it. b must be whole and valid (Check).
func Filter(dst, b []byte, o FilterOptions) (out []byte, kept int, err error) {
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
	var keptRecs []Record
	var raws [][]byte
	tombstone := false
	for i := 0; i < int(h.NumRecords); i++ {
		r, n, err := decodeRecord(body, h)
		if err != nil {
			re := err.(*RecordError)
			re.Index = i
			return dst, 0, re
		}
		if o.Keep(r) {
			keptRecs, raws = append(keptRecs, r), append(raws, body[:n])
			tombstone = tombstone || r.Value == nil
		}
		body = body[n:]
	}
	if len(body) != 0 {
		return dst, 0, &RecordError{Index: int(h.NumRecords), Reason: fmt.Sprintf("%d bytes after the last record", len(body))}
	}
	_, has := h.DeleteHorizon()
	horizon := o.DeleteHorizon >= 0 && (tombstone || o.HorizonAlways) && !has
	var raw []byte // the kept records, when they must be rewritten or compressed
	for i, r := range raws {
		if horizon {
			raw = rebase(raw, r, keptRecs[i].Timestamp-o.DeleteHorizon)
		} else if codec != CompressionNone {
			raw = append(raw, r...)
		}
	}
	kept = len(raws)
	start := len(dst)
	dst = append(dst, b[:HeaderSize]...)
	binary.BigEndian.PutUint32(dst[start+offCount:], uint32(kept))
	attrs := h.Attributes
	if horizon {
		attrs |= AttrDeleteHorizon
		binary.BigEndian.PutUint64(dst[start+offFirstTS:], uint64(o.DeleteHorizon))
	}
	if kept == 0 {
		attrs &^= AttrCompressionMask // nothing to decompress: Kafka writes an empty batch uncompressed
	}
	binary.BigEndian.PutUint16(dst[start+offAttributes:], uint16(attrs))
	switch {
	case codec == CompressionNone && !horizon:
		for _, r := range raws { // as they are: no copy between
			dst = append(dst, r...)
		}
	case codec == CompressionNone || kept == 0:
		dst = append(dst, raw...)
	default:
		dst, err = Compress(dst, codec, raw)
	}
	if err != nil {
		return dst[:start], 0, err
	}
	FinishBatch(dst[start:])
	return dst, kept, nil
}

// rebase appends record raw (length, attributes, timestamp delta, the
// rest) to dst with its timestamp delta replaced by delta. raw was
// decoded once already, so its varints are well formed.
func rebase(dst, raw []byte, delta int64) []byte {
	_, n1 := binary.Varint(raw)
	_, n2 := binary.Varint(raw[n1+1:])
	rest := raw[n1+1+n2:]
	body := binary.AppendVarint([]byte{raw[n1]}, delta)
	body = append(body, rest...)
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...)
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
