package multiraft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func sampleAERequest() *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: []byte("2"), Addr: []byte("10.0.0.2:9192")},
		Term:      7, Leader: []byte("10.0.0.1:9192"), PrevLogEntry: 41, PrevLogTerm: 6, LeaderCommitIndex: 40, Quiesce: true,
		Entries: []*raft.Log{
			{Index: 42, Term: 7, Type: raft.LogCommand, Data: []byte("batch"), Extensions: []byte{1, 2}, AppendedAt: time.Unix(1e9, 5)},
			{Index: 43, Term: 7, Type: raft.LogNoop},
			{Index: 44, Term: 7, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte{9}, 300)},
		},
	}
}

// Every field of an AppendEntries request and response survives the
// binary form, and the decoded request keeps no reference to the payload.
func TestAppendEntriesRoundTrip(t *testing.T) {
	req := sampleAERequest()
	payload, err := appendPayload(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	var got raft.AppendEntriesRequest
	if err := decodePayload(payload, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Entries[0].AppendedAt.Equal(req.Entries[0].AppendedAt) || !got.Entries[1].AppendedAt.IsZero() {
		t.Fatalf("AppendedAt: %v, %v", got.Entries[0].AppendedAt, got.Entries[1].AppendedAt)
	}
	for i := range got.Entries {
		got.Entries[i].AppendedAt = req.Entries[i].AppendedAt
	}
	if !reflect.DeepEqual(&got, req) {
		t.Fatalf("decoded %+v, want %+v", got, *req)
	}
	clear(payload)
	if string(got.Entries[0].Data) != "batch" || string(got.ID) != "2" {
		t.Fatal("the decoded request refers to its payload")
	}
	// Decoded in place (a follower's own frame buffer), the fields are
	// the payload's bytes: no copy.
	payload, _ = appendPayload(nil, req)
	var in raft.AppendEntriesRequest
	if err := decodeAERequestIn(payload, &in); err != nil || string(in.Entries[0].Data) != "batch" {
		t.Fatalf("in place: %+v, %v", in, err)
	}
	clear(payload)
	if string(in.Entries[0].Data) == "batch" {
		t.Fatal("the request decoded in place holds a copy")
	}
	payload, _ = appendPayload(nil, req)
	if err := decodePayload(payload[:len(payload)/2], new(raft.AppendEntriesRequest)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("a truncated request: %v, want ErrProtocol", err)
	}
	// A request whose few bytes claim ten million entries is refused
	// before anything is allocated for them.
	forged := appendAERequest(nil, &raft.AppendEntriesRequest{})
	forged = binary.AppendUvarint(forged[:len(forged)-1], 10_000_000)
	if err := decodePayload(forged, new(raft.AppendEntriesRequest)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("a forged entry count: %v, want ErrProtocol", err)
	}

	resp := &raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: []byte("3")},
		Term: 7, LastLog: 44, Success: true, Quiesced: true}
	payload, _ = appendPayload(nil, resp)
	var back raft.AppendEntriesResponse
	if err := decodePayload(payload, &back); err != nil || !reflect.DeepEqual(&back, resp) {
		t.Fatalf("response %+v, %v; want %+v", back, err, *resp)
	}
	if err := decodePayload(append(payload, 0), &back); !errors.Is(err, ErrProtocol) {
		t.Fatalf("a response with a trailing byte: %v, want ErrProtocol", err)
	}
}

// Whatever arrives, decoding neither panics nor gives what would not
// decode the same after it is sent on.
func FuzzDecodeAppendEntries(f *testing.F) {
	p, _ := appendPayload(nil, sampleAERequest())
	f.Add(p)
	p, _ = appendPayload(nil, &raft.AppendEntriesResponse{Term: 1, Success: true})
	f.Add(p)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, new(raft.AppendEntriesRequest), new(raft.AppendEntriesRequest))
		fuzzRoundTrip(t, b, new(raft.AppendEntriesResponse), new(raft.AppendEntriesResponse))
	})
}

func fuzzRoundTrip[T any](t *testing.T, b []byte, first, second *T) {
	if decodePayload(b, first) != nil {
		return
	}
	again, err := appendPayload(nil, first)
	if err != nil {
		t.Fatal(err)
	}
	if err := decodePayload(again, second); err != nil || !reflect.DeepEqual(first, second) {
		t.Fatalf("%x decoded as %+v, sent on as %+v (%v)", b, first, second, err)
	}
}

// BenchmarkAppendEntriesCodec encodes and decodes an AppendEntries of
// entries as a follower gets them under load: the binary form against
// raft's msgpack.
func BenchmarkAppendEntriesCodec(b *testing.B) {
	for _, shape := range []struct {
		name    string
		n, size int
	}{{"16x200B", 16, 200}, {"4x100KiB", 4, 100 << 10}} {
		req := sampleAERequest()
		req.Entries = nil
		for i := range shape.n {
			req.Entries = append(req.Entries, &raft.Log{Index: uint64(100 + i), Term: 7, Type: raft.LogCommand,
				Data: make([]byte, shape.size), AppendedAt: time.Now()})
		}
		for _, c := range []struct {
			name   string
			encode func([]byte, any) ([]byte, error)
			decode func([]byte, any) error
		}{{"binary", appendPayload, decodePayload}, {"msgpack", appendMsgpack, decodeMsgpack}} {
			b.Run(shape.name+"/"+c.name, func(b *testing.B) {
				buf := make([]byte, 0, sizeHint(req))
				b.ReportAllocs()
				for b.Loop() {
					p, err := c.encode(buf[:0], req)
					if err != nil {
						b.Fatal(err)
					}
					var got raft.AppendEntriesRequest
					if err := c.decode(p, &got); err != nil || len(got.Entries) != shape.n {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
