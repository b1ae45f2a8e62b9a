package multiraft

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/internal/frame"
)

// The wire protocol, version 2.
//
// A connection starts with a handshake. The dialer sends handshakeMagic and
// protocolVersion; the acceptor answers with one status byte and, after
// handshakeOK, its incarnation: 8 bytes drawn at random when its Host
// started, which tell a restarted peer from one whose connection broke.
// Then both ends run a yamux session over the connection. Only the dialer
// opens streams on it; each node calls its peers over the sessions it
// dialed and serves the streams of the sessions it accepted.
//
// Every stream starts with an open frame, whose body is
//
//	byte  protocolVersion
//	byte  streamCalls or streamService
//	the service's name, for streamService
//
// A service stream is answered with one frame holding a status byte
// (serviceOK or serviceUnknown) and then belongs to the service on both
// ends. A call stream carries calls, one at a time: a request frame, any
// snapshot bytes it announces, then a response frame:
//
//	request:  byte kind, uvarint-length group name, payload
//	response: byte status, payload
//
// The payload of an AppendEntries call and of its response is the binary
// form of aecodec.go; of the other Raft RPCs, raft's own msgpack encoding
// of the struct (as raft's NetworkTransport sends it). A
// heartbeat frame (callHeartbeats, no group name) carries the heartbeats of
// many groups in the compact form of appendHeartbeats, answered with
// appendHeartbeatResults. Frames are read with internal/frame; anything
// malformed closes the stream.
const (
	handshakeMagic  = "MKRP"
	protocolVersion = 2 // 2: AppendEntries in aecodec.go's form

	handshakeOK          byte = 0
	handshakeUnsupported byte = 1

	streamCalls   byte = 1
	streamService byte = 2

	serviceOK      byte = 0
	serviceUnknown byte = 1
)

// Call kinds. The set only grows, with a new protocolVersion.
const (
	callAppendEntries   byte = 1
	callRequestVote     byte = 2
	callRequestPreVote  byte = 3
	callTimeoutNow      byte = 4
	callInstallSnapshot byte = 5
	callHeartbeats      byte = 6
)

// Call statuses, and the status of each heartbeat in a heartbeat response.
const (
	statusOK           byte = 0 // the group answered; its response follows
	statusUnknownGroup byte = 1 // the group is not open here
	statusNoResponse   byte = 2 // raft did not take or answer in time (or shut down)
	statusBusy         byte = 3 // the group's previous heartbeat is still being handled
	statusSlow         byte = 4 // the heartbeat handler overran and was abandoned
	statusRemoteError  byte = 5 // raft answered an error; its text follows
	statusCount             = 6
)

// Limits of the wire format.
const (
	maxName     = 255  // a group or service name, in bytes
	maxField    = 4096 // one byte field of a heartbeat, or an error text
	maxOpenBody = 2 + maxName
)

var msgpack = &codec.MsgpackHandle{}

// Encoders and decoders keep state between uses; they are pooled.
var (
	encoders = sync.Pool{New: func() any { return codec.NewEncoderBytes(new([]byte), msgpack) }}
	decoders = sync.Pool{New: func() any { return codec.NewDecoderBytes(nil, msgpack) }}
)

// appendMsgpack appends v in msgpack to b: straight into b's spare
// capacity when it suffices (size it with sizeHint), else with one copy.
func appendMsgpack(b []byte, v any) ([]byte, error) {
	enc := encoders.Get().(*codec.Encoder)
	defer encoders.Put(enc)
	out := b[len(b):]
	enc.ResetBytes(&out)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	if n := len(out); n > 0 && cap(b)-len(b) >= n && &b[:len(b)+n][len(b)] == &out[0] {
		return b[:len(b)+n], nil // encoded in place
	}
	return append(b, out...), nil
}

// sizeHint is about the encoded size of a request: its entries' data and
// a little per entry.
func sizeHint(req any) int {
	n := 256
	if a, ok := req.(*raft.AppendEntriesRequest); ok {
		for _, e := range a.Entries {
			n += len(e.Data) + len(e.Extensions) + 64
		}
	}
	return n
}

// appendOpen appends a stream's open frame.
func appendOpen(b []byte, kind byte, service string) []byte {
	b, at := frame.Begin(b)
	b = append(b, protocolVersion, kind)
	b = append(b, service...)
	return frame.End(b, at)
}

// parseOpen splits an open frame's body.
func parseOpen(body []byte) (kind byte, service string, err error) {
	if len(body) < 2 || body[0] != protocolVersion {
		return 0, "", fmt.Errorf("%w: stream open frame %x", ErrProtocol, body)
	}
	kind, name := body[1], body[2:]
	switch {
	case kind == streamCalls && len(name) == 0:
	case kind == streamService && validName(string(name)) == nil:
	default:
		return 0, "", fmt.Errorf("%w: stream kind %d with name %q", ErrProtocol, kind, name)
	}
	return kind, string(name), nil
}

// validName reports whether name may name a group or service: 1 to
// maxName bytes of printable ASCII without spaces.
func validName(name string) error {
	if len(name) == 0 || len(name) > maxName {
		return fmt.Errorf("%w: name of %d bytes, want 1..%d", ErrInvalidConfig, len(name), maxName)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: name %q has byte 0x%02x", ErrInvalidConfig, name, c)
		}
	}
	return nil
}

// appendRequest appends a call's request frame with req (appendPayload).
func appendRequest(b []byte, kind byte, group string, req any) ([]byte, error) {
	b = slices.Grow(b, frame.HeaderSize+2+len(group)+sizeHint(req))
	b, at := frame.Begin(b)
	b = append(b, kind)
	b = appendString(b, group)
	b, err := appendPayload(b, req)
	if err != nil {
		return nil, fmt.Errorf("multiraft: encode request: %w", err)
	}
	return frame.End(b, at), nil
}

// parseRequest splits a request frame's body.
func parseRequest(body []byte) (kind byte, group string, payload []byte, err error) {
	d := decoder{b: body}
	kind = d.byte()
	g := d.bytes(maxName)
	if d.err == nil && (kind < callAppendEntries || kind > callHeartbeats || (len(g) == 0) != (kind == callHeartbeats)) {
		d.fail(fmt.Sprintf("call kind %d for group %q", kind, g))
	}
	if d.err != nil {
		return 0, "", nil, d.err
	}
	return kind, string(g), body[d.off:], nil
}

// appendResponse appends a response frame: status, then payload.
func appendResponse(b []byte, status byte, payload []byte) []byte {
	b, at := frame.Begin(b)
	b = append(b, status)
	b = append(b, payload...)
	return frame.End(b, at)
}

// decodeMsgpack decodes b into v; v keeps no reference to b (the codec
// copies byte fields), so b may be reused.
func decodeMsgpack(b []byte, v any) error {
	dec := decoders.Get().(*codec.Decoder)
	defer decoders.Put(dec)
	dec.ResetBytes(b)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	return nil
}

// hbEntry is one heartbeat of a heartbeat frame.
type hbEntry struct {
	group string
	req   raft.AppendEntriesRequest // RPCHeader, Term and Leader only
}

// hbResult answers the hbEntry at the same position.
type hbResult struct {
	status byte
	resp   raft.AppendEntriesResponse // when status is statusOK
	msg    string                     // when status is statusRemoteError
}

// isHeartbeat is raft's own test (NetworkTransport.handleCommand) for an
// AppendEntries request that goes to the heartbeat handler.
func isHeartbeat(a *raft.AppendEntriesRequest) bool {
	return a.Term != 0 && (len(a.Addr) > 0 || len(a.Leader) > 0) &&
		a.PrevLogEntry == 0 && a.PrevLogTerm == 0 &&
		len(a.Entries) == 0 && a.LeaderCommitIndex == 0
}

// fitsHeartbeat reports whether a heartbeat's byte fields fit the compact
// form; one that does not goes as an ordinary AppendEntries call.
func fitsHeartbeat(a *raft.AppendEntriesRequest) bool {
	return len(a.ID) <= maxField && len(a.Addr) <= maxField && len(a.Leader) <= maxField
}

// appendHeartbeats appends a heartbeat request frame. Each entry is
//
//	str     group name
//	varint  RPCHeader.ProtocolVersion
//	bytes   RPCHeader.ID, RPCHeader.Addr
//	uvarint Term
//	bytes   Leader
//	byte    flags (flagQuiesce)
//
// where str and bytes are a uvarint length and that many bytes.
func appendHeartbeats(b []byte, entries []hbEntry) []byte {
	b, at := frame.Begin(b)
	b = append(b, callHeartbeats, 0) // kind, empty group name
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for i := range entries {
		e := &entries[i]
		b = appendString(b, e.group)
		b = binary.AppendVarint(b, int64(e.req.ProtocolVersion))
		b = appendString(b, e.req.ID)
		b = appendString(b, e.req.Addr)
		b = binary.AppendUvarint(b, e.req.Term)
		b = appendString(b, e.req.Leader)
		var flags byte
		if e.req.Quiesce {
			flags |= flagQuiesce
		}
		b = append(b, flags)
	}
	return frame.End(b, at)
}

// parseHeartbeats decodes a heartbeat request's payload (after kind and
// group). Byte fields alias payload.
func parseHeartbeats(payload []byte, max int) ([]hbEntry, error) {
	d := decoder{b: payload}
	n := d.count(max)
	entries := make([]hbEntry, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var e hbEntry
		g := d.bytes(maxName)
		if len(g) == 0 && d.err == nil {
			d.fail("empty group name")
		}
		e.group = string(g)
		e.req.ProtocolVersion = raft.ProtocolVersion(d.varint())
		e.req.ID = d.bytes(maxField)
		e.req.Addr = d.bytes(maxField)
		e.req.Term = d.uvarint()
		e.req.Leader = d.bytes(maxField)
		flags := d.byte()
		if flags&^flagQuiesce != 0 && d.err == nil {
			d.fail(fmt.Sprintf("unknown heartbeat flags 0x%02x", flags))
		}
		e.req.Quiesce = flags&flagQuiesce != 0
		entries = append(entries, e)
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return entries, nil
}

// Flags of a heartbeat's response.
const (
	flagSuccess        byte = 1 << 0
	flagNoRetryBackoff byte = 1 << 1
	flagQuiesced       byte = 1 << 2
)

// flagQuiesce flags an AppendEntries request, whole (aecodec.go) or as a
// heartbeat, that asks its follower to quiesce.
const flagQuiesce byte = 1 << 0

// appendHeartbeatResults appends the payload of a heartbeat response: a
// uvarint count, then per heartbeat a status byte and, for statusOK, the
// response as appendAEResponse writes it (varint ProtocolVersion, bytes ID
// and Addr, uvarint Term and LastLog, a flags byte); for
// statusRemoteError the error text.
func appendHeartbeatResults(b []byte, results []hbResult) []byte {
	b = binary.AppendUvarint(b, uint64(len(results)))
	for i := range results {
		r := &results[i]
		b = append(b, r.status)
		switch r.status {
		case statusOK:
			b = appendAEResponse(b, &r.resp)
		case statusRemoteError:
			b = appendString(b, truncate(r.msg))
		}
	}
	return b
}

// parseHeartbeatResults decodes what appendHeartbeatResults wrote; want is
// the number of heartbeats asked.
func parseHeartbeatResults(payload []byte, want int) ([]hbResult, error) {
	d := decoder{b: payload}
	n := d.count(want)
	if d.err == nil && n != want {
		d.fail(fmt.Sprintf("%d results for %d heartbeats", n, want))
	}
	results := make([]hbResult, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var r hbResult
		r.status = d.byte()
		switch {
		case d.err != nil:
		case r.status == statusOK:
			d.aeResponse(&r.resp, &aeCopier{alias: true})
		case r.status == statusRemoteError:
			r.msg = string(d.bytes(maxField))
		case r.status >= statusCount:
			d.fail(fmt.Sprintf("unknown status %d", r.status))
		}
		results = append(results, r)
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return results, nil
}

func truncate(s string) string {
	if len(s) > maxField {
		return s[:maxField]
	}
	return s
}

func appendString[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads a frame body; the first error sticks and makes every
// later read return zero values.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d", ErrProtocol, what, d.off)
	}
}

// count reads an entry count, at most max and at most the bytes left
// (every entry takes one byte at least), so that a forged count cannot
// make the caller allocate.
func (d *decoder) count(max int) int {
	n := d.uvarint()
	if d.err == nil && (n > uint64(max) || n > uint64(len(d.b)-d.off)) {
		d.fail(fmt.Sprintf("%d entries (at most %d) in %d bytes", n, max, len(d.b)-d.off))
	}
	if d.err != nil {
		return 0
	}
	return int(n)
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

func (d *decoder) uvarint() uint64 { return readVarint(d, binary.Uvarint, "uvarint") }
func (d *decoder) varint() int64   { return readVarint(d, binary.Varint, "varint") }

// readVarint reads one varint with read (binary.Uvarint or Varint).
func readVarint[T uint64 | int64](d *decoder, read func([]byte) (T, int), what string) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b[d.off:])
	if n <= 0 {
		d.fail("bad " + what)
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

// readHandshakeReply reads the acceptor's answer to a handshake.
func readHandshakeReply(r io.Reader) (incarnation uint64, err error) {
	var status [1]byte
	if _, err := io.ReadFull(r, status[:]); err != nil {
		return 0, err
	}
	switch status[0] {
	case handshakeOK:
	case handshakeUnsupported:
		return 0, fmt.Errorf("%w: the peer does not speak protocol version %d", ErrProtocol, protocolVersion)
	default:
		return 0, fmt.Errorf("%w: handshake status %d", ErrProtocol, status[0])
	}
	var inc [8]byte
	if _, err := io.ReadFull(r, inc[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(inc[:]), nil
}
