package record

import (
	"encoding/binary"
	"fmt"
	"sync"
)

// ErrInvalidRecord is wrapped by errors saying that the records inside a
// batch disagree with its header. Kafka answers them with INVALID_RECORD
// (its InvalidRecordException); they also match ErrInvalidBatch.
var ErrInvalidRecord = fmt.Errorf("%w: records do not match the batch header", ErrInvalidBatch)

// RecordCountError is a batch whose header's record count is not the number
// of records encoded in it.
type RecordCountError struct {
	NumRecords int32  // the header's count
	Found      int    // records walked before the check failed
	Reason     string // what the walk ran into
}

func (e *RecordCountError) Error() string {
	return fmt.Sprintf("record: batch claims %d records, but %s (%d records walked)", e.NumRecords, e.Reason, e.Found)
}

// Unwrap gives ErrInvalidRecord.
func (e *RecordCountError) Unwrap() error { return ErrInvalidRecord }

// minRecordBody is the smallest encoded record after its length prefix:
// attributes, then five varints (timestamp delta, offset delta, key length,
// value length, header count) of at least one byte each.
const minRecordBody = 6

// CheckRecordCount verifies that the batch b, whose header h was returned
// by Check or CheckProduce, holds exactly h.NumRecords records. It walks the
// records' length prefixes, decompressing first (bounded by
// MaxDecompressedSize) if the batch is compressed; it decodes no record.
// This is the count check of Kafka's LogValidator, which a leader runs on a
// produced batch before proposing it: a batch may not claim more offsets
// than it carries records.
func CheckRecordCount(b []byte, h Header) error {
	if h.Size() > len(b) || h.Size() < HeaderSize {
		return &LengthError{Length: h.Length, Have: len(b) - LogOverhead}
	}
	body := b[HeaderSize:h.Size()]
	if codec := h.Compression(); codec != CompressionNone {
		if int64(h.NumRecords)*(1+minRecordBody) > MaxDecompressedSize {
			// More records than any section Decompress returns can
			// hold: no need to decompress to know.
			return &RecordCountError{NumRecords: h.NumRecords, Reason: fmt.Sprintf("%d decompressed bytes cannot hold them", MaxDecompressedSize)}
		}
		buf := countBufs.Get().(*[]byte)
		defer putCountBuf(buf)
		out, err := Decompress((*buf)[:0], codec, body)
		if err != nil {
			return err
		}
		*buf = out
		body = out
	}
	return countRecords(body, h.NumRecords)
}

// countRecords checks that body is exactly want length-prefixed records.
func countRecords(body []byte, want int32) error {
	// Each record takes at least 1+minRecordBody bytes, so a count the
	// body cannot hold fails before the walk.
	if int64(want)*(1+minRecordBody) > int64(len(body)) {
		return &RecordCountError{NumRecords: want, Reason: fmt.Sprintf("its %d bytes of records cannot hold them", len(body))}
	}
	found, pos := 0, 0
	for pos < len(body) {
		if found == int(want) {
			return &RecordCountError{NumRecords: want, Found: found, Reason: fmt.Sprintf("%d bytes remain after them", len(body)-pos)}
		}
		// Records under 8 KiB have one- or two-byte zigzag lengths,
		// decoded inline: this loop runs once per produced record.
		var u uint64
		var n int
		if c := body[pos]; c < 0x80 {
			u, n = uint64(c), 1
		} else if pos+1 < len(body) && body[pos+1] < 0x80 {
			u, n = uint64(c&0x7f)|uint64(body[pos+1])<<7, 2
		} else {
			u, n = binary.Uvarint(body[pos:])
		}
		length := int64(u>>1) ^ -int64(u&1)
		if n <= 0 || length < minRecordBody || length > int64(len(body)-pos-n) {
			return &RecordCountError{NumRecords: want, Found: found, Reason: "a record length is bad"}
		}
		pos += n + int(length)
		found++
	}
	if found != int(want) {
		return &RecordCountError{NumRecords: want, Found: found, Reason: "the records end sooner"}
	}
	return nil
}

// countBufs holds buffers for decompressed records sections being counted.
var countBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// maxPooledCountBuf keeps one huge batch from pinning its buffer in the
// pool.
const maxPooledCountBuf = 4 << 20

func putCountBuf(b *[]byte) {
	if cap(*b) <= maxPooledCountBuf {
		countBufs.Put(b)
	}
}
