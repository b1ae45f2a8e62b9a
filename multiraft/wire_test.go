package multiraft

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/internal/frame"
)

func TestHeartbeatFrameRoundTrip(t *testing.T) {
	entries := []hbEntry{
		{group: "p/abc/0", req: *heartbeatReq(7)},
		{group: "meta", req: raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: []byte("2")}, Term: 1 << 40}},
	}
	f := appendHeartbeats(nil, entries)
	body, err := frame.Read(bytes.NewReader(f), 1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	kind, group, payload, err := parseRequest(body)
	if err != nil || kind != callHeartbeats || group != "" {
		t.Fatalf("parseRequest: %d %q %v", kind, group, err)
	}
	got, err := parseHeartbeats(payload, 10)
	if err != nil || len(got) != 2 || got[0].group != "p/abc/0" || got[1].req.Term != 1<<40 || got[1].req.ProtocolVersion != 3 ||
		string(got[0].req.Leader) != "a" {
		t.Fatalf("parseHeartbeats: %+v, %v", got, err)
	}
	if _, err := parseHeartbeats(payload, 1); !errors.Is(err, ErrProtocol) {
		t.Fatalf("more heartbeats than allowed: %v", err)
	}
	results := []hbResult{
		{status: statusOK, resp: raft.AppendEntriesResponse{Term: 7, LastLog: 9, Success: true, NoRetryBackoff: true}},
		{status: statusRemoteError, msg: "nope"},
		{status: statusBusy},
	}
	back, err := parseHeartbeatResults(appendHeartbeatResults(nil, results), 3)
	if err != nil || back[0].resp.LastLog != 9 || !back[0].resp.Success || !back[0].resp.NoRetryBackoff || back[1].msg != "nope" || back[2].status != statusBusy {
		t.Fatalf("results: %+v, %v", back, err)
	}
	if _, err := parseHeartbeatResults(appendHeartbeatResults(nil, results), 2); !errors.Is(err, ErrProtocol) {
		t.Fatalf("results for a different count: %v", err)
	}
}

// A request frame carries raft's struct, entries included.
func TestRequestRoundTrip(t *testing.T) {
	req := &raft.AppendEntriesRequest{Term: 5, PrevLogEntry: 9, PrevLogTerm: 4, LeaderCommitIndex: 8,
		Entries: []*raft.Log{{Index: 10, Term: 5, Type: raft.LogCommand, Data: []byte("hello"), AppendedAt: time.Unix(1e9, 5).UTC()}}}
	f, err := appendRequest(nil, callAppendEntries, "g", req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := frame.Read(bytes.NewReader(f), 1, 1<<20)
	kind, group, payload, err := parseRequest(body)
	if err != nil || kind != callAppendEntries || group != "g" {
		t.Fatalf("parseRequest: %d %q %v", kind, group, err)
	}
	var got raft.AppendEntriesRequest
	if err := decodePayload(payload, &got); err != nil {
		t.Fatal(err)
	}
	e := got.Entries[0]
	if got.Term != 5 || got.PrevLogEntry != 9 || len(got.Entries) != 1 || string(e.Data) != "hello" || e.Index != 10 || !e.AppendedAt.Equal(req.Entries[0].AppendedAt) {
		t.Fatalf("decoded %+v (entry %+v)", got, e)
	}
}

func FuzzParseHeartbeats(f *testing.F) {
	f.Add(appendHeartbeats(nil, []hbEntry{{group: "g", req: *heartbeatReq(1)}})[frame.HeaderSize:])
	f.Add(appendHeartbeatResults(nil, []hbResult{{status: statusOK}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if kind, _, payload, err := parseRequest(b); err == nil && kind == callHeartbeats {
			_, _ = parseHeartbeats(payload, 1024)
		}
		_, _ = parseHeartbeatResults(b, 1)
		_, _, _ = parseOpen(b)
	})
}

func TestServerIDs(t *testing.T) {
	if got := ServerID(12); got != "12" {
		t.Errorf("ServerID(12) = %q", got)
	}
	if id, ok := nodeOf("2147483647"); !ok || id != 2147483647 {
		t.Errorf("nodeOf(max) = %d, %v", id, ok)
	}
	for _, s := range []raft.ServerID{"", "0", "-1", "+1", "01", "x", "1.0", "2147483648", " 1", "unknown-3"} {
		if id, ok := nodeOf(s); ok {
			t.Errorf("nodeOf(%q) = %d, want no node", s, id)
		}
	}
}

// An AppendEntries whose few bytes claim ten million entries fails to
// decode without allocating for them: the decoder sizes a collection by
// what arrives, not by what its header claims.
func TestDecodeForgedEntryCount(t *testing.T) {
	forged := []byte{0x81, 0xa7} // a map of one key, "Entries"
	forged = append(forged, "Entries"...)
	forged = append(forged, 0xdd, 0x00, 0x98, 0x96, 0x80) // array32 of 10,000,000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := decodeMsgpack(forged, new(raft.AppendEntriesRequest))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("decode: %v, want ErrProtocol", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Fatalf("decoding 12 bytes allocated %d bytes", grew)
	}
}
