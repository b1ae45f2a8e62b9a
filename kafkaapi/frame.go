package kafkaapi

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/frame"
	"github.com/minikafka/minikafka-go/internal/nozero"
)

// minRequestHeader is the smallest request header: api key, api version and
// correlation id.
const minRequestHeader = 8

// readFrame reads one size-prefixed request frame (internal/frame, which
// allocates as the bytes arrive) and returns its body.
func readFrame(r io.Reader, maxBytes int32) ([]byte, error) {
	b, err := frame.Read(r, minRequestHeader, uint32(maxBytes))
	var se *frame.SizeError
	if errors.As(err, &se) {
		return nil, &FrameSizeError{Size: int32(se.Size), Max: maxBytes}
	}
	return b, err
}

// peekFrameSize returns the size of the next frame in br, without reading
// it, after checking it as readFrame does.
func peekFrameSize(br *bufio.Reader, maxBytes int32) (int32, error) {
	b, err := br.Peek(frame.HeaderSize)
	if err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(b))
	if n < minRequestHeader || n > maxBytes {
		return 0, &FrameSizeError{Size: n, Max: maxBytes}
	}
	return n, nil
}

// readFrameBody reads the frame of size bytes (peekFrameSize) into memory
// of exactly that size: the budget already holds it. The memory is not
// cleared first (nozero.Bytes): the read fills it or the body is dropped.
func readFrameBody(r io.Reader, size int32) ([]byte, error) {
	return frame.ReadInto(r, uint32(size), uint32(size), nozero.Bytes(int(size)))
}

// requestHeader is the part of a request header the server uses.
type requestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
}

// peekHeader reads the fixed start of a request header.
func peekHeader(frame []byte) (requestHeader, error) {
	if len(frame) < minRequestHeader {
		return requestHeader{}, &DecodeError{Key: -1, Version: -1, Err: io.ErrUnexpectedEOF}
	}
	return requestHeader{
		Key:           int16(binary.BigEndian.Uint16(frame[0:])),
		Version:       int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}, nil
}

// requestBody reads the rest of the request header (v1: client id; v2,
// used by flexible requests: client id and tagged fields) and returns the
// body and the client id ("" if null).
func requestBody(frame []byte, flexible bool) (body []byte, clientID string, err error) {
	b := kbin.Reader{Src: frame[minRequestHeader:]}
	if n := b.Int16(); n > 0 {
		clientID = string(b.Span(int(n)))
	}
	if flexible {
		kmsg.SkipTags(&b)
	}
	if err := b.Complete(); err != nil {
		return nil, "", err
	}
	return b.Src, clientID, nil
}

// appendResponse appends a whole response frame: size, correlation id, the
// response header's tagged fields if headerV1, and the body.
func appendResponse(dst []byte, correlationID int32, headerV1 bool, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if headerV1 {
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
