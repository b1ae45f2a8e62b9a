package partition

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// memSink is a snapshot sink in memory.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "test" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

// A snapshot's first MiB never asks for room (a local reference
// snapshot must go through on a full disk); past it each write does, and
// a refusal fails the write before anything reaches the disk.
func TestRoomSinkStopsAtTheReserve(t *testing.T) {
	full := errors.New("test: below the reserve")
	var asked int
	var refuse bool
	inner := &memSink{}
	k := &roomSink{SnapshotSink: inner, room: func(n int) error {
		asked += n
		if refuse {
			return full
		}
		return nil
	}}
	var _ raft.SnapshotSink = k
	refuse = true
	chunk := make([]byte, 256<<10)
	for range 4 { // exactly roomFree
		if _, err := k.Write(chunk); err != nil {
			t.Fatalf("a write within the first MiB on a full disk: %v", err)
		}
	}
	if asked != 0 {
		t.Fatalf("asked for %d bytes of room within the first MiB", asked)
	}
	if n, err := k.Write(chunk); !errors.Is(err, full) || n != 0 || inner.Len() != roomFree {
		t.Fatalf("a write past the first MiB on a full disk: %d, %v; sink holds %d bytes", n, err, inner.Len())
	}
	refuse = false
	if _, err := k.Write(chunk); err != nil || asked != 2*len(chunk) {
		t.Fatalf("a write past the first MiB with room: %v, asked for %d bytes", err, asked)
	}
}
