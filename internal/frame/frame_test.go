package frame

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/minikafka/minikafka-go/internal/nozero"
	"github.com/minikafka/minikafka-go/internal/nozero/nozerotest"
)

func TestRoundTrip(t *testing.T) {
	var b []byte
	b = Append(b, []byte("hello"))
	b, pos := Begin(b)
	b = append(b, bytes.Repeat([]byte{7}, 3<<20)...) // several read chunks
	b = End(b, pos)
	r := bytes.NewReader(b)
	got, err := Read(r, 1, 4<<20)
	if err != nil || string(got) != "hello" {
		t.Fatalf("first frame: %q, %v", got, err)
	}
	got, err = Read(r, 1, 4<<20)
	if err != nil || len(got) != 3<<20 || got[len(got)-1] != 7 {
		t.Fatalf("second frame: %d bytes, %v", len(got), err)
	}
	if _, err := Read(r, 1, 4<<20); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestBoundsAndTruncation(t *testing.T) {
	var se *SizeError
	if _, err := Read(bytes.NewReader(Append(nil, nil)), 1, 10); !errors.As(err, &se) || se.Size != 0 {
		t.Fatalf("empty body with min 1: %v", err)
	}
	// A frame that claims 2^32-1 bytes is refused before anything is allocated.
	if _, err := Read(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), 1, 1<<20); !errors.As(err, &se) || se.Max != 1<<20 {
		t.Fatalf("huge length: %v", err)
	}
	// A body cut short is an unexpected EOF, also across a chunk boundary.
	full := Append(nil, make([]byte, chunk+10))
	if _, err := Read(bytes.NewReader(full[:len(full)-1]), 1, 2*chunk); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated body: %v", err)
	}
	if _, err := Read(bytes.NewReader([]byte{0, 0}), 1, 10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated prefix: %v", err)
	}
}

func TestReadIntoReusesTheBuffer(t *testing.T) {
	buf := make([]byte, 0, 16)
	got, err := ReadInto(bytes.NewReader(Append(nil, []byte("hello"))), 1, 100, buf)
	if err != nil || string(got) != "hello" || &got[0] != &buf[:1][0] {
		t.Fatalf("ReadInto: %q, %v, reused %v", got, err, err == nil && &got[0] == &buf[:1][0])
	}
	got, err = ReadInto(bytes.NewReader(Append(nil, make([]byte, 40))), 1, 100, buf)
	if err != nil || len(got) != 40 {
		t.Fatalf("ReadInto a larger body: %d bytes, %v", len(got), err)
	}
	if _, err := ReadInto(bytes.NewReader(Append(nil, []byte("hello"))[:7]), 1, 100, buf); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated into a buffer: %v", err)
	}
}

// Frames read into uncleared memory hold exactly the bytes sent, in one
// chunk and across several, whatever the memory held before.
func TestReadHoldsOnlyTheFramesBytes(t *testing.T) {
	for _, n := range []int{5, chunk - 1, chunk + 7, 3*chunk + 11} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i % 251)
		}
		nozerotest.DirtyHeap()
		got, err := Read(bytes.NewReader(Append(nil, body)), 1, 4*chunk)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d-byte frame: %d bytes read, equal %v, err %v", n, len(got), bytes.Equal(got, body), err)
		}
		got, err = ReadInto(bytes.NewReader(Append(nil, body)), uint32(n), uint32(n), nozero.Bytes(n))
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d-byte frame into nozero.Bytes: equal %v, err %v", n, bytes.Equal(got, body), err)
		}
	}
}
