package metadata

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The encodings of this package (commands and snapshots) are built from a few
// big-endian primitives with fixed-width lengths, so that every value has
// exactly one encoding: decode(encode(x)) == x and encode(decode(b)) == b.
//
//	int8/16/32/64  fixed width, big endian
//	bool           one byte, 0 or 1 (anything else is malformed)
//	string         uint32 length, then the bytes
//	array          uint32 count, then the elements

func appendU8(b []byte, v uint8) []byte   { return append(b, v) }
func appendI16(b []byte, v int16) []byte  { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func appendI32(b []byte, v int32) []byte  { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func appendI64(b []byte, v int64) []byte  { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }
func appendLen(b []byte, n int) []byte    { return binary.BigEndian.AppendUint32(b, uint32(n)) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendString(b []byte, s string) []byte {
	return append(appendLen(b, len(s)), s...)
}

// reader decodes the primitives above. The first failure sticks: later reads
// return zero values, and err reports the first problem with its offset, so
// decoders read a whole structure and check err once.
type reader struct {
	buf  []byte
	off  int
	kind error // ErrMalformedCommand or ErrMalformedSnapshot
	err  error
}

func newReader(b []byte, kind error) *reader { return &reader{buf: b, kind: kind} }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = &DecodeError{Offset: r.off, Reason: fmt.Sprintf(format, args...), Err: r.kind}
	}
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.buf)-r.off < n {
		r.fail("%s: need %d bytes, have %d", what, n, len(r.buf)-r.off)
		return nil
	}
	p := r.buf[r.off : r.off+n]
	r.off += n
	return p
}

func (r *reader) u8(what string) uint8 {
	if p := r.take(1, what); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) i16(what string) int16 {
	if p := r.take(2, what); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (r *reader) i32(what string) int32 {
	if p := r.take(4, what); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (r *reader) i64(what string) int64 {
	if p := r.take(8, what); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

func (r *reader) u64(what string) uint64 {
	if p := r.take(8, what); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (r *reader) boolean(what string) bool {
	switch v := r.u8(what); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail("%s: bool byte %d is neither 0 nor 1", what, v)
		return false
	}
}

func (r *reader) str(what string) string {
	n := r.length(what, 1)
	return string(r.take(n, what))
}

// length reads an array or string length and checks that at least
// n*minElem bytes remain, so that a corrupt count cannot make the caller
// allocate more than the input could possibly hold.
func (r *reader) length(what string, minElem int) int {
	if r.err != nil {
		return 0
	}
	start := r.off
	p := r.take(4, what+" length")
	if p == nil {
		return 0
	}
	n := uint64(binary.BigEndian.Uint32(p))
	if left := uint64(len(r.buf) - r.off); n > math.MaxInt32 || n*uint64(minElem) > left {
		r.off = start
		r.fail("%s: length %d exceeds the %d bytes left", what, n, left)
		return 0
	}
	return int(n)
}

// done fails unless every byte was consumed: trailing bytes would mean two
// encodings of one value.
func (r *reader) done() error {
	if r.err == nil && r.off != len(r.buf) {
		r.fail("%d trailing bytes", len(r.buf)-r.off)
	}
	return r.err
}
