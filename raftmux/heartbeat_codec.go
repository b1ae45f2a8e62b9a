package raftmux

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// Heartbeat frames, version 1. Both directions use the same framing:
//
//	uint32  big-endian length of the body (1..hbMaxFrame)
//	body:
//	  byte     version = hbVersion
//	  byte     kind: hbKindRequest or hbKindResponse
//	  uvarint  frame id; a response carries its request's id
//	  uvarint  entry count; a response has exactly its request's count
//	  entries
//
// A request entry is one raft heartbeat (an AppendEntriesRequest that raft's
// NetworkTransport would route to the heartbeat handler); only the fields a
// heartbeat sets travel:
//
//	str      group name (1..MaxChannelNameLen bytes)
//	varint   RPCHeader.ProtocolVersion
//	bytes    RPCHeader.ID
//	bytes    RPCHeader.Addr
//	uvarint  Term
//	bytes    Leader
//
// A response entry answers the request entry at the same position:
//
//	byte     status (hbOK ... hbRemoteError)
//	if hbOK:
//	  varint   RPCHeader.ProtocolVersion
//	  bytes    RPCHeader.ID
//	  bytes    RPCHeader.Addr
//	  uvarint  Term
//	  uvarint  LastLog
//	  byte     flags: bit 0 Success, bit 1 NoRetryBackoff, others zero
//	if hbRemoteError:
//	  str      error text (at most hbMaxField bytes)
//
// where bytes and str are a uvarint length (at most hbMaxField) and that many
// bytes. A decoder rejects anything else, including trailing bytes, with
// ErrProtocol, and the connection is closed. New statuses, flags or fields
// need a new version.
const (
	hbVersion      byte = 1
	hbKindRequest  byte = 1
	hbKindResponse byte = 2

	hbMaxFrame = 16 << 20 // body bytes
	hbMaxField = 4096     // bytes in one ID, Addr, Leader or error text
)

// Response statuses. The set only grows, with a new frame version.
const (
	hbOK           byte = 0 // the group's heartbeat handler answered; a response follows
	hbUnknownGroup byte = 1 // no open transport with a heartbeat handler for the group
	hbNoResponse   byte = 2 // the handler returned without answering (raft shutting down)
	hbBusy         byte = 3 // the group's previous heartbeat is still being handled
	hbSlow         byte = 4 // the handler overran HeartbeatHandlerTimeout and was abandoned
	hbRemoteError  byte = 5 // the handler answered with an error; its text follows

	hbStatusCount = 6
)

// Response flags.
const (
	hbFlagSuccess        byte = 1 << 0
	hbFlagNoRetryBackoff byte = 1 << 1
)

// hbEntry is one heartbeat of a request frame.
type hbEntry struct {
	group string
	req   raft.AppendEntriesRequest // RPCHeader, Term and Leader only
}

// hbResult is one entry of a response frame.
type hbResult struct {
	status byte
	resp   raft.AppendEntriesResponse // when status is hbOK
	msg    string                     // when status is hbRemoteError
}

// isHeartbeat is raft's own test (NetworkTransport.handleCommand) for an
// AppendEntries request that goes to the heartbeat handler.
func isHeartbeat(a *raft.AppendEntriesRequest) bool {
	return a.Term != 0 && (len(a.Addr) > 0 || len(a.Leader) > 0) &&
		a.PrevLogEntry == 0 && a.PrevLogTerm == 0 &&
		len(a.Entries) == 0 && a.LeaderCommitIndex == 0
}

// appendRequestFrame appends a whole request frame, length prefix included,
// to b. Byte fields longer than hbMaxField and group names longer than
// MaxChannelNameLen are the caller's bug; they are checked by the decoder.
func appendRequestFrame(b []byte, id uint64, entries []hbEntry) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, hbVersion, hbKindRequest)
	b = binary.AppendUvarint(b, id)
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for i := range entries {
		e := &entries[i]
		b = appendBytes(b, e.group)
		b = binary.AppendVarint(b, int64(e.req.ProtocolVersion))
		b = appendBytes(b, e.req.ID)
		b = appendBytes(b, e.req.Addr)
		b = binary.AppendUvarint(b, e.req.Term)
		b = appendBytes(b, e.req.Leader)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// appendResponseFrame appends a whole response frame, length prefix
// included, to b. Error texts are cut to hbMaxField bytes.
func appendResponseFrame(b []byte, id uint64, results []hbResult) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, hbVersion, hbKindResponse)
	b = binary.AppendUvarint(b, id)
	b = binary.AppendUvarint(b, uint64(len(results)))
	for i := range results {
		r := &results[i]
		b = append(b, r.status)
		switch r.status {
		case hbOK:
			b = binary.AppendVarint(b, int64(r.resp.ProtocolVersion))
			b = appendBytes(b, r.resp.ID)
			b = appendBytes(b, r.resp.Addr)
			b = binary.AppendUvarint(b, r.resp.Term)
			b = binary.AppendUvarint(b, r.resp.LastLog)
			var flags byte
			if r.resp.Success {
				flags |= hbFlagSuccess
			}
			if r.resp.NoRetryBackoff {
				flags |= hbFlagNoRetryBackoff
			}
			b = append(b, flags)
		case hbRemoteError:
			msg := r.msg
			if len(msg) > hbMaxField {
				msg = msg[:hbMaxField]
			}
			b = appendBytes(b, msg)
		}
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

func appendBytes[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readFrame reads one heartbeat frame from r and returns its body in a new
// slice, which decoded entries alias.
func readFrame(r *bufio.Reader) ([]byte, error) {
	return readSizedFrame(r, hbMaxFrame, "heartbeat")
}

// readSizedFrame reads one frame (a big-endian uint32 length of 1..max,
// then that many bytes) from r and returns its body in a new slice; what
// names the frame in errors. Heartbeat and RPC frames share it.
func readSizedFrame(r *bufio.Reader, max uint32, what string) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size == 0 || size > max {
		return nil, fmt.Errorf("%w: %s frame of %d bytes", ErrProtocol, what, size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// decodeRequest decodes a request frame's body. Byte fields alias body.
func decodeRequest(body []byte) (id uint64, entries []hbEntry, err error) {
	d := decoder{b: body}
	id, n := d.head(hbKindRequest)
	if d.err == nil {
		entries = make([]hbEntry, 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		var e hbEntry
		g := d.bytes(MaxChannelNameLen)
		if len(g) == 0 && d.err == nil {
			d.fail("empty group name")
		}
		e.group = string(g)
		e.req.ProtocolVersion = raft.ProtocolVersion(d.varint())
		e.req.ID = d.bytes(hbMaxField)
		e.req.Addr = d.bytes(hbMaxField)
		e.req.Term = d.uvarint()
		e.req.Leader = d.bytes(hbMaxField)
		entries = append(entries, e)
	}
	if err := d.end(); err != nil {
		return 0, nil, err
	}
	return id, entries, nil
}

// decodeResponse decodes a response frame's body. Byte fields alias body.
func decodeResponse(body []byte) (id uint64, results []hbResult, err error) {
	d := decoder{b: body}
	id, n := d.head(hbKindResponse)
	if d.err == nil {
		results = make([]hbResult, 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		var r hbResult
		r.status = d.byte()
		switch {
		case d.err != nil:
		case r.status == hbOK:
			r.resp.ProtocolVersion = raft.ProtocolVersion(d.varint())
			r.resp.ID = d.bytes(hbMaxField)
			r.resp.Addr = d.bytes(hbMaxField)
			r.resp.Term = d.uvarint()
			r.resp.LastLog = d.uvarint()
			flags := d.byte()
			if flags&^(hbFlagSuccess|hbFlagNoRetryBackoff) != 0 && d.err == nil {
				d.fail(fmt.Sprintf("unknown flags 0x%02x", flags))
			}
			r.resp.Success = flags&hbFlagSuccess != 0
			r.resp.NoRetryBackoff = flags&hbFlagNoRetryBackoff != 0
		case r.status == hbRemoteError:
			r.msg = string(d.bytes(hbMaxField))
		case r.status >= hbStatusCount:
			d.fail(fmt.Sprintf("unknown status %d", r.status))
		}
		results = append(results, r)
	}
	if err := d.end(); err != nil {
		return 0, nil, err
	}
	return id, results, nil
}

// decoder reads a frame body; the first error sticks and makes every later
// read return zero values.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: heartbeat frame: %s at byte %d", ErrProtocol, what, d.off)
	}
}

// head reads the version, checks the kind and returns the frame id and the
// entry count, which it bounds by the bytes left (every entry takes at
// least one byte) so that a forged count cannot make the caller allocate.
func (d *decoder) head(kind byte) (id, n uint64) {
	if v := d.byte(); v != hbVersion && d.err == nil {
		d.err = fmt.Errorf("%w: heartbeat frame version %d (want %d)", ErrUnsupportedVersion, v, hbVersion)
		return 0, 0
	}
	if k := d.byte(); k != kind && d.err == nil {
		d.fail(fmt.Sprintf("frame kind %d (want %d)", k, kind))
	}
	id = d.uvarint()
	n = d.uvarint()
	if d.err == nil && n > uint64(len(d.b)-d.off) {
		d.fail(fmt.Sprintf("%d entries in %d bytes", n, len(d.b)-d.off))
	}
	if d.err != nil {
		return 0, 0
	}
	return id, n
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("truncated")
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return v
}

// bytes reads a length-prefixed field of at most max bytes; an empty field
// is nil.
func (d *decoder) bytes(max int) []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(max) || n > uint64(len(d.b)-d.off) {
		d.fail(fmt.Sprintf("field of %d bytes", n))
		return nil
	}
	if n == 0 {
		return nil
	}
	s := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return s
}

// end reports the first error, or trailing bytes.
func (d *decoder) end() error {
	if d.err == nil && d.off != len(d.b) {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)-d.off))
	}
	return d.err
}
