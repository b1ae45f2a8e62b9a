package record

import (
	"encoding/binary"
	"fmt"
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
