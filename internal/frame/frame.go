// Package frame reads and writes the length-prefixed frames that every
// protocol of MiniKafka uses, Kafka's and our own: a big-endian uint32
// length, then that many bytes of body.
package frame

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/minikafka/minikafka-go/internal/nozero"
)

// HeaderSize is the length prefix's size in bytes.
const HeaderSize = 4

// chunk bounds each allocation while a body is read, so that a peer that
// announces a large frame must send the bytes before the reader holds the
// memory.
const chunk = 1 << 20

// SizeError means a frame announced a body length outside the reader's
// bounds. The stream is then out of step and should be closed.
type SizeError struct {
	Size     uint32 // the announced length
	Min, Max uint32 // the bounds the reader accepts
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("frame: body of %d bytes, want %d..%d", e.Size, e.Min, e.Max)
}

// Read reads one frame from r and returns its body in a new slice. The
// body must be lo..hi bytes long; anything else is a *SizeError. A
// stream that ends inside a frame gives io.ErrUnexpectedEOF; one that ends
// before it gives io.EOF.
func Read(r io.Reader, lo, hi uint32) ([]byte, error) {
	return ReadInto(r, lo, hi, nil)
}

// ReadInto is Read that returns the body in buf's memory when it has the
// capacity (a buffer reused between frames), else in a new slice.
func ReadInto(r io.Reader, lo, hi uint32, buf []byte) ([]byte, error) {
	var size [HeaderSize]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < lo || n > hi {
		return nil, &SizeError{Size: n, Min: lo, Max: hi}
	}
	if uint32(cap(buf)) >= n {
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return buf, nil
	}
	// nozero: every byte up to len(buf) is read before buf is returned.
	buf = nozero.Bytes(int(min(n, chunk)))[:0]
	for uint32(len(buf)) < n {
		step := min(n-uint32(len(buf)), chunk)
		if uint32(cap(buf)-len(buf)) < step {
			grown := nozero.Bytes(len(buf) + int(max(step, uint32(len(buf)))))[:len(buf)]
			copy(grown, buf)
			buf = grown
		}
		got, err := io.ReadFull(r, buf[len(buf):len(buf)+int(step)])
		buf = buf[:len(buf)+got]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// Begin appends a length prefix to be filled in by End and returns the
// extended slice and the prefix's position.
func Begin(dst []byte) ([]byte, int) {
	return append(dst, 0, 0, 0, 0), len(dst)
}

// End writes the length of the frame begun at pos (everything appended
// since Begin) into its prefix.
func End(dst []byte, pos int) []byte {
	binary.BigEndian.PutUint32(dst[pos:], uint32(len(dst)-pos-HeaderSize))
	return dst
}

// Append appends a whole frame holding body to dst.
func Append(dst, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...)
}
