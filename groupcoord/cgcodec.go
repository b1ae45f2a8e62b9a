package groupcoord

import (
	"encoding/binary"
	"errors"
	"math"
)

// A small codec for the KIP-848 records, which kmsg does not encode: keys
// are non-flexible (int16 version, int16-length strings), values are
// flexible (int16 version, compact strings and arrays, tagged fields), as
// Kafka's generated code writes them.

// errShort is a value or key that ends before its fields do.
var errShort = errors.New("truncated")

// cgWriter appends encoded fields to b.
type cgWriter struct{ b []byte }

func (w *cgWriter) i8(v int8)   { w.b = append(w.b, byte(v)) }
func (w *cgWriter) i16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *cgWriter) i32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *cgWriter) i64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *cgWriter) uv(v uint64) { w.b = binary.AppendUvarint(w.b, v) }

// str is a non-flexible (key) string.
func (w *cgWriter) str(s string) {
	w.i16(int16(len(s)))
	w.b = append(w.b, s...)
}

// cstr is a compact string.
func (w *cgWriter) cstr(s string) {
	w.uv(uint64(len(s)) + 1)
	w.b = append(w.b, s...)
}

// cnstr is a compact nullable string.
func (w *cgWriter) cnstr(s *string) {
	if s == nil {
		w.uv(0)
		return
	}
	w.cstr(*s)
}

func (w *cgWriter) uuid(id TopicID) { w.b = append(w.b, id[:]...) }

// arr writes a compact array length.
func (w *cgWriter) arr(n int) { w.uv(uint64(n) + 1) }

// noTags writes an empty tagged-field section.
func (w *cgWriter) noTags() { w.uv(0) }

// cgReader reads fields from b; the first error sticks in err and every
// later read returns zero values.
type cgReader struct {
	b   []byte
	err error
}

func (r *cgReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *cgReader) i8() int8 {
	if b := r.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *cgReader) i16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *cgReader) i32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *cgReader) i64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *cgReader) uv() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *cgReader) str() string {
	n := r.i16()
	return string(r.take(int(n)))
}

func (r *cgReader) cnstr() *string {
	n := r.uv()
	if r.err != nil || n == 0 {
		return nil
	}
	if n-1 > uint64(len(r.b)) {
		r.err = errShort
		return nil
	}
	s := string(r.take(int(n - 1)))
	return &s
}

func (r *cgReader) cstr() string {
	if s := r.cnstr(); s != nil {
		return *s
	}
	return ""
}

func (r *cgReader) uuid() (id TopicID) {
	copy(id[:], r.take(16))
	return id
}

// arr reads a compact array length, bounded by what the remaining bytes
// can hold at minSize bytes an element; -1 for a null array.
func (r *cgReader) arr(minSize int) int {
	n := r.uv()
	if r.err != nil || n == 0 {
		return -1
	}
	if n-1 > uint64(len(r.b)/max(minSize, 1)) || n-1 > math.MaxInt32 {
		r.err = errShort
		return -1
	}
	return int(n - 1)
}

// tags reads a tagged-field section, calling f with each field's tag and
// bytes; unknown tags are skipped, as Kafka skips them.
func (r *cgReader) tags(f func(tag uint64, b []byte)) {
	n := r.uv()
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uv()
		size := r.uv()
		if size > uint64(len(r.b)) {
			r.err = errShort
			return
		}
		b := r.take(int(size))
		if f != nil && r.err == nil {
			f(tag, b)
		}
	}
}
