package raftmux

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

func sampleEntries() []hbEntry {
	return []hbEntry{
		{group: "meta", req: raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: []byte("1"), Addr: []byte("10.0.0.1:9192")},
			Term:      7, Leader: []byte("10.0.0.1:9192"),
		}},
		{group: "p/3f2a/17", req: raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: -1}, // no byte fields at all
			Term:      1<<64 - 1,
		}},
		{group: strings.Repeat("g", MaxChannelNameLen), req: raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ID: bytes.Repeat([]byte{0xff}, hbMaxField), Addr: []byte{0}},
			Term:      1, Leader: bytes.Repeat([]byte{'a'}, hbMaxField),
		}},
	}
}

func sampleResults() []hbResult {
	return []hbResult{
		{status: hbOK, resp: raft.AppendEntriesResponse{
			RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: []byte("2"), Addr: []byte("10.0.0.2:9192")},
			Term:      7, LastLog: 12345, Success: true,
		}},
		{status: hbOK, resp: raft.AppendEntriesResponse{Term: 1<<64 - 1, NoRetryBackoff: true}},
		{status: hbOK, resp: raft.AppendEntriesResponse{Success: true, NoRetryBackoff: true}},
		{status: hbOK},
		{status: hbUnknownGroup},
		{status: hbNoResponse},
		{status: hbBusy},
		{status: hbSlow},
		{status: hbRemoteError, msg: "unexpected command"},
		{status: hbRemoteError, msg: ""},
	}
}

// body strips the length prefix from a whole frame, checking it.
func body(t *testing.T, frame []byte) []byte {
	t.Helper()
	b, err := readFrame(bufio.NewReader(bytes.NewReader(frame)))
	if err != nil {
		t.Fatalf("readFrame: %v", err)
	}
	if len(b) != len(frame)-4 {
		t.Fatalf("readFrame returned %d bytes of a %d-byte frame", len(b), len(frame))
	}
	return b
}

func TestHeartbeatCodecRoundTrip(t *testing.T) {
	for _, entries := range [][]hbEntry{nil, sampleEntries()[:1], sampleEntries()} {
		id := uint64(len(entries))*1000 + 1
		gotID, got, err := decodeRequest(body(t, appendRequestFrame([]byte("junk"), id, entries)[4:]))
		if err != nil {
			t.Fatalf("decodeRequest of %d entries: %v", len(entries), err)
		}
		if gotID != id || !reflect.DeepEqual(got, append([]hbEntry{}, entries...)) {
			t.Errorf("request round trip: got id %d %+v, want id %d %+v", gotID, got, id, entries)
		}
	}
	for _, results := range [][]hbResult{nil, sampleResults()} {
		gotID, got, err := decodeResponse(body(t, appendResponseFrame(nil, 1<<40, results)))
		if err != nil {
			t.Fatalf("decodeResponse of %d results: %v", len(results), err)
		}
		if gotID != 1<<40 || !reflect.DeepEqual(got, append([]hbResult{}, results...)) {
			t.Errorf("response round trip: got id %d %+v, want %+v", gotID, got, results)
		}
	}
}

// An over-long error text is cut, not sent whole or refused.
func TestHeartbeatCodecCutsLongErrorText(t *testing.T) {
	long := strings.Repeat("x", hbMaxField+10)
	_, got, err := decodeResponse(body(t, appendResponseFrame(nil, 1, []hbResult{{status: hbRemoteError, msg: long}})))
	if err != nil {
		t.Fatal(err)
	}
	if got[0].msg != long[:hbMaxField] {
		t.Errorf("got a %d-byte error text, want %d", len(got[0].msg), hbMaxField)
	}
}

func TestHeartbeatCodecRejects(t *testing.T) {
	req := body(t, appendRequestFrame(nil, 9, sampleEntries()[:1]))
	resp := body(t, appendResponseFrame(nil, 9, []hbResult{{status: hbOK}}))
	with := func(b []byte, i int, v byte) []byte {
		b = bytes.Clone(b)
		b[i] = v
		return b
	}
	// Offsets in resp: version 0, kind 1, id 2, count 3, status 4, then an
	// empty OK response: version 5, ID 6, Addr 7, term 8, lastlog 9, flags 10.
	for _, c := range []struct {
		name   string
		decode func([]byte) error
		body   []byte
		want   error
	}{
		{"empty request", decReq, nil, ErrProtocol},
		{"request version 2", decReq, with(req, 0, 2), ErrUnsupportedVersion},
		{"response as request", decReq, resp, ErrProtocol},
		{"request as response", decResp, req, ErrProtocol},
		{"truncated request", decReq, req[:len(req)-1], ErrProtocol},
		{"trailing byte", decReq, append(bytes.Clone(req), 0), ErrProtocol},
		{"empty group name", decReq, append([]byte{hbVersion, hbKindRequest, 1, 1, 0}, 0, 0, 0, 1, 0), ErrProtocol},
		{"group name too long", decReq, append([]byte{hbVersion, hbKindRequest, 1, 1}, binary.AppendUvarint(nil, MaxChannelNameLen+1)...), ErrProtocol},
		{"field too long", decReq, append([]byte{hbVersion, hbKindRequest, 1, 1, 1, 'g', 0}, binary.AppendUvarint(nil, hbMaxField+1)...), ErrProtocol},
		{"count beyond the bytes", decReq, []byte{hbVersion, hbKindRequest, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}, ErrProtocol},
		{"bad uvarint", decReq, []byte{hbVersion, hbKindRequest, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrProtocol},
		{"unknown status", decResp, with(resp, 4, hbStatusCount), ErrProtocol},
		{"unknown flag", decResp, with(resp, 10, 4), ErrProtocol},
		{"truncated response", decResp, resp[:len(resp)-1], ErrProtocol},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.decode(c.body); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
	for _, size := range []uint32{0, hbMaxFrame + 1} {
		frame := binary.BigEndian.AppendUint32(nil, size)
		if _, err := readFrame(bufio.NewReader(bytes.NewReader(frame))); !errors.Is(err, ErrProtocol) {
			t.Errorf("frame length %d: err = %v, want ErrProtocol", size, err)
		}
	}
}

func decReq(b []byte) error  { _, _, err := decodeRequest(b); return err }
func decResp(b []byte) error { _, _, err := decodeResponse(b); return err }

// Decoding arbitrary bytes never panics; what decodes re-encodes to a frame
// that decodes the same.
func FuzzHeartbeatRequest(f *testing.F) {
	f.Add(appendRequestFrame(nil, 1, sampleEntries())[4:])
	f.Add(appendRequestFrame(nil, 0, nil)[4:])
	f.Fuzz(func(t *testing.T, b []byte) {
		id, entries, err := decodeRequest(b)
		if err != nil {
			if !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("error %v wraps neither ErrProtocol nor ErrUnsupportedVersion", err)
			}
			return
		}
		id2, entries2, err := decodeRequest(appendRequestFrame(nil, id, entries)[4:])
		if err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		if id2 != id || !reflect.DeepEqual(entries2, entries) {
			t.Fatalf("round trip changed the request: %+v -> %+v", entries, entries2)
		}
	})
}

func FuzzHeartbeatResponse(f *testing.F) {
	f.Add(appendResponseFrame(nil, 1, sampleResults())[4:])
	f.Add(appendResponseFrame(nil, 0, nil)[4:])
	f.Fuzz(func(t *testing.T, b []byte) {
		id, results, err := decodeResponse(b)
		if err != nil {
			if !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("error %v wraps neither ErrProtocol nor ErrUnsupportedVersion", err)
			}
			return
		}
		id2, results2, err := decodeResponse(appendResponseFrame(nil, id, results)[4:])
		if err != nil {
			t.Fatalf("re-encoded response does not decode: %v", err)
		}
		if id2 != id || !reflect.DeepEqual(results2, results) {
			t.Fatalf("round trip changed the response: %+v -> %+v", results, results2)
		}
	})
}
