package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record is one record of a batch: what a producer gives to AppendBatch and
// what AppendRecords reads back.
type Record struct {
	// Offset is the record's absolute offset: the batch's base offset plus
	// the record's offset delta. AppendBatch ignores it (a producer's batch
	// starts at offset 0 and the broker assigns the rest).
	Offset int64
	// Timestamp is in milliseconds since the Unix epoch.
	Timestamp int64
	// Key and Value: nil is encoded as null (length -1), which is not the
	// same as an empty, non-nil slice.
	Key, Value []byte
	Headers    []RecordHeader
}

// RecordHeader is one key/value header of a record. (Header is the batch
// header.)
type RecordHeader struct {
	Key   string
	Value []byte // nil is null
}

// RecordError is a record inside a batch that cannot be decoded.
type RecordError struct {
	Index  int // position of the record in the batch
	Reason string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("record: record %d of batch: %s", e.Index, e.Reason)
}

// Unwrap gives ErrInvalidBatch.
func (e *RecordError) Unwrap() error { return ErrInvalidBatch }

// AppendRecords decodes the records of the single batch b (decompressing
// them) and appends them to dst. It checks the header (ParseHeader) and that
// the record count and lengths agree, but not the CRC: call Check first on
// untrusted bytes. The keys, values and header values of the returned
// records may alias b, so b must not be modified while they are in use.
// Control batches decode like any other (their records hold the marker).
func AppendRecords(dst []Record, b []byte) ([]Record, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return dst, err
	}
	if h.Size() > len(b) {
		return dst, &LengthError{Length: h.Length, Have: len(b) - LogOverhead}
	}
	body := b[HeaderSize:h.Size()]
	if codec := h.Compression(); codec != CompressionNone {
		if body, err = Decompress(nil, codec, body); err != nil {
			return dst, err
		}
	}
	start := len(dst)
	for i := 0; i < int(h.NumRecords); i++ {
		var r Record
		var n int
		if r, n, err = decodeRecord(body, h); err != nil {
			re := err.(*RecordError)
			re.Index = i
			return dst[:start], re
		}
		dst = append(dst, r)
		body = body[n:]
	}
	if len(body) != 0 {
		return dst[:start], &RecordError{Index: int(h.NumRecords), Reason: fmt.Sprintf("%d bytes after the last record", len(body))}
	}
	return dst, nil
}

// reader walks a record's fields; the first failure sticks.
type reader struct {
	b   []byte
	bad string
}

func (r *reader) fail(why string) {
	if r.bad == "" {
		r.bad = why
	}
	r.b = nil
}

func (r *reader) varlong() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int32 {
	v := r.varlong()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("varint out of int32 range")
		return 0
	}
	return int32(v)
}

func (r *reader) int8() int8 {
	if len(r.b) < 1 {
		r.fail("short record")
		return 0
	}
	v := int8(r.b[0])
	r.b = r.b[1:]
	return v
}

// bytes reads a varint length and that many bytes; -1 is nil.
func (r *reader) bytes() []byte {
	n := r.varint()
	switch {
	case r.bad != "":
		return nil
	case n == -1:
		return nil
	case n < -1 || int(n) > len(r.b):
		r.fail(fmt.Sprintf("length %d past the record", n))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// decodeRecord decodes the record at the start of body and returns how many
// bytes it took.
func decodeRecord(body []byte, h Header) (Record, int, error) {
	length, n := binary.Varint(body)
	if n <= 0 || length < 0 || length > int64(len(body)-n) {
		return Record{}, 0, &RecordError{Reason: "bad record length"}
	}
	r := reader{b: body[n : n+int(length)]}
	var rec Record
	r.int8() // attributes: unused
	rec.Timestamp = h.FirstTimestamp + r.varlong()
	rec.Offset = h.BaseOffset + int64(r.varint())
	rec.Key = r.bytes()
	rec.Value = r.bytes()
	nh := r.varint()
	if r.bad == "" && (nh < 0 || int(nh) > len(r.b)) {
		r.fail(fmt.Sprintf("bad header count %d", nh))
	}
	if r.bad == "" && nh > 0 {
		rec.Headers = make([]RecordHeader, nh)
		for i := range rec.Headers {
			k := r.bytes()
			if k == nil && r.bad == "" {
				r.fail("null header key")
			}
			rec.Headers[i] = RecordHeader{Key: string(k), Value: r.bytes()}
		}
	}
	if r.bad == "" && len(r.b) != 0 {
		r.fail(fmt.Sprintf("%d bytes left over in the record", len(r.b)))
	}
	if r.bad != "" {
		return Record{}, 0, &RecordError{Reason: r.bad}
	}
	return rec, n + int(length), nil
}
