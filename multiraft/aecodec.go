package multiraft

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// AppendEntries, the call that carries every entry, has a binary form of
// its own: raft's msgpack went through reflection for each entry and
// allocated each entry's fields one by one (5.8% of the servers' CPU at the
// transactional peak). A request's payload is
//
//	header   varint ProtocolVersion, bytes ID, bytes Addr
//	uvarint  Term
//	bytes    Leader
//	uvarint  PrevLogEntry, PrevLogTerm, LeaderCommitIndex
//	byte     flags (flagQuiesce)
//	uvarint  entry count, then per entry:
//	         uvarint Index, Term; byte Type; bytes Data, Extensions;
//	         varint AppendedAt in Unix nanoseconds, 0 for the zero time
//
// and a response's
//
//	header   as above
//	uvarint  Term, LastLog
//	byte     flags (flagSuccess, flagNoRetryBackoff, flagQuiesced)
//
// where bytes is a uvarint length and that many bytes. A decoded request
// keeps no reference to its payload (its byte fields share one copy),
// unless it is served from a frame buffer of its own (decodeAERequestIn).

// appendPayload appends a Raft RPC's request or response: AppendEntries in
// the binary form above, anything else in raft's msgpack.
func appendPayload(b []byte, v any) ([]byte, error) {
	switch m := v.(type) {
	case *raft.AppendEntriesRequest:
		return appendAERequest(b, m), nil
	case *raft.AppendEntriesResponse:
		return appendAEResponse(b, m), nil
	}
	return appendMsgpack(b, v)
}

// decodePayload decodes what appendPayload appended into v; v keeps no
// reference to b.
func decodePayload(b []byte, v any) error {
	switch m := v.(type) {
	case *raft.AppendEntriesRequest:
		return decodeAERequest(b, m)
	case *raft.AppendEntriesResponse:
		return decodeAEResponse(b, m)
	}
	return decodeMsgpack(b, v)
}

func appendRPCHeader(b []byte, h *raft.RPCHeader) []byte {
	b = binary.AppendVarint(b, int64(h.ProtocolVersion))
	b = appendString(b, h.ID)
	return appendString(b, h.Addr)
}

func appendAERequest(b []byte, r *raft.AppendEntriesRequest) []byte {
	b = appendRPCHeader(b, &r.RPCHeader)
	b = binary.AppendUvarint(b, r.Term)
	b = appendString(b, r.Leader)
	b = binary.AppendUvarint(b, r.PrevLogEntry)
	b = binary.AppendUvarint(b, r.PrevLogTerm)
	b = binary.AppendUvarint(b, r.LeaderCommitIndex)
	var flags byte
	if r.Quiesce {
		flags |= flagQuiesce
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(r.Entries)))
	for _, e := range r.Entries {
		b = binary.AppendUvarint(b, e.Index)
		b = binary.AppendUvarint(b, e.Term)
		b = append(b, byte(e.Type))
		b = appendString(b, e.Data)
		b = appendString(b, e.Extensions)
		var at int64
		if !e.AppendedAt.IsZero() {
			at = e.AppendedAt.UnixNano()
		}
		b = binary.AppendVarint(b, at)
	}
	return b
}

// aeCopier hands out copies of a payload's byte fields from one
// allocation sized to the payload, so that a request costs one allocation
// for all its bytes, not one per field; or, with alias, the fields
// themselves.
type aeCopier struct {
	buf   []byte
	alias bool
}

func (c *aeCopier) copy(p []byte) []byte {
	if len(p) == 0 {
		return nil
	}
	if c.alias {
		return p[:len(p):len(p)]
	}
	if c.buf == nil {
		return append([]byte(nil), p...)
	}
	n := len(c.buf)
	c.buf = append(c.buf, p...)
	return c.buf[n:len(c.buf):len(c.buf)]
}

func (d *decoder) rpcHeader(c *aeCopier) raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(d.varint()),
		ID: c.copy(d.bytes(maxField)), Addr: c.copy(d.bytes(maxField))}
}

func decodeAERequest(b []byte, r *raft.AppendEntriesRequest) error {
	return decodeAERequestWith(b, r, aeCopier{buf: make([]byte, 0, len(b))})
}

// decodeAERequestIn decodes a request whose byte fields may refer to b:
// the caller hands b over (a follower's frame, read into a buffer of its
// own, saves a copy of every entry).
func decodeAERequestIn(b []byte, r *raft.AppendEntriesRequest) error {
	return decodeAERequestWith(b, r, aeCopier{alias: true})
}

func decodeAERequestWith(b []byte, r *raft.AppendEntriesRequest, c aeCopier) error {
	d := decoder{b: b}
	*r = raft.AppendEntriesRequest{RPCHeader: d.rpcHeader(&c), Term: d.uvarint(), Leader: c.copy(d.bytes(maxField)),
		PrevLogEntry: d.uvarint(), PrevLogTerm: d.uvarint(), LeaderCommitIndex: d.uvarint()}
	flags := d.byte()
	if flags&^flagQuiesce != 0 && d.err == nil {
		d.fail(fmt.Sprintf("unknown AppendEntries flags 0x%02x", flags))
	}
	r.Quiesce = flags&flagQuiesce != 0
	// An entry takes 6 bytes at least: count bounds what is allocated by
	// what arrived.
	n := d.count(len(b) / 6)
	if n > 0 {
		logs := make([]raft.Log, n)
		r.Entries = make([]*raft.Log, n)
		for i := range logs {
			e := &logs[i]
			e.Index, e.Term, e.Type = d.uvarint(), d.uvarint(), raft.LogType(d.byte())
			e.Data, e.Extensions = c.copy(d.bytes(len(b))), c.copy(d.bytes(len(b)))
			if at := d.varint(); at != 0 {
				e.AppendedAt = time.Unix(0, at)
			}
			r.Entries[i] = e
		}
	}
	if err := d.end(); err != nil {
		*r = raft.AppendEntriesRequest{}
		return err
	}
	return nil
}

// appendAEResponse appends a response in the form above; a heartbeat
// response's entries use it too (appendHeartbeatResults).
func appendAEResponse(b []byte, r *raft.AppendEntriesResponse) []byte {
	b = appendRPCHeader(b, &r.RPCHeader)
	b = binary.AppendUvarint(b, r.Term)
	b = binary.AppendUvarint(b, r.LastLog)
	var flags byte
	if r.Success {
		flags |= flagSuccess
	}
	if r.NoRetryBackoff {
		flags |= flagNoRetryBackoff
	}
	if r.Quiesced {
		flags |= flagQuiesced
	}
	return append(b, flags)
}

func decodeAEResponse(b []byte, r *raft.AppendEntriesResponse) error {
	d := decoder{b: b}
	d.aeResponse(r, &aeCopier{}) // two small fields: each its own copy
	if err := d.end(); err != nil {
		*r = raft.AppendEntriesResponse{}
		return err
	}
	return nil
}

// aeResponse reads what appendAEResponse wrote into r, its byte fields
// through c.
func (d *decoder) aeResponse(r *raft.AppendEntriesResponse, c *aeCopier) {
	*r = raft.AppendEntriesResponse{RPCHeader: d.rpcHeader(c), Term: d.uvarint(), LastLog: d.uvarint()}
	flags := d.byte()
	if flags&^(flagSuccess|flagNoRetryBackoff|flagQuiesced) != 0 && d.err == nil {
		d.fail(fmt.Sprintf("unknown flags 0x%02x", flags))
	}
	r.Success, r.NoRetryBackoff, r.Quiesced = flags&flagSuccess != 0, flags&flagNoRetryBackoff != 0, flags&flagQuiesced != 0
}
