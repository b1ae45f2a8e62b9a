// Package nozero allocates byte buffers without the runtime clearing them
// first, for buffers that are overwritten whole before anything reads them.
package nozero

import (
	"strings"
	"unsafe"
)

// Bytes returns a byte slice of length and capacity n whose bytes are
// unspecified: the runtime does not clear them first, as make does. It is
// for a buffer the caller overwrites whole before anything reads it (a
// frame body read with io.ReadFull, a command built from a header and a
// copy, a fetch's read of the log). Clearing large buffers that were then
// overwritten anyway was 9% of the servers' CPU at the 1 KiB produce peak
// (docs/performance.md).
//
// strings.Builder.Grow is the standard library's one allocation without
// clearing that hands out its memory; the slice is that memory, which the
// builder's string (one byte long, then dropped) no longer uses.
func Bytes(n int) []byte {
	if n <= 0 {
		return []byte{}
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte(0)
	return unsafe.Slice(unsafe.StringData(b.String()), n)[:n:n]
}
