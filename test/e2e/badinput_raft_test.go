package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/minikafka/minikafka-go/internal/frame"
)

// The Raft port's wire format, as multiraft/wire.go defines it (version
// 2): a handshake, a yamux session, streams that open with a frame
// {version, kind} and then carry request frames {call kind, uvarint-length
// group name, payload}, each answered {status, payload}.
const (
	raftMagic        = "MKRP"
	raftVersion      = 2
	raftStreamCalls  = 1
	raftCallAppend   = 1
	raftCallHearts   = 6
	raftStatusRemote = 5 // the call was refused with an error text
)

// raftProbe is a session on a node's Raft port, as a peer would open it,
// that sends forged frames.
type raftProbe struct {
	nc   net.Conn
	sess *yamux.Session
}

// dialRaft connects to a Raft port and completes the handshake.
func dialRaft(ctx context.Context, addr string) (*raftProbe, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	reply := make([]byte, 9) // status, incarnation
	if _, err := nc.Write(append([]byte(raftMagic), raftVersion)); err != nil {
		nc.Close()
		return nil, err
	}
	if _, err := io.ReadFull(nc, reply); err != nil || reply[0] != 0 {
		nc.Close()
		return nil, fmt.Errorf("e2e: raft handshake with %s: status %d, %v", addr, reply[0], err)
	}
	_ = nc.SetDeadline(time.Time{})
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	sess, err := yamux.Client(nc, cfg)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &raftProbe{nc: nc, sess: sess}, nil
}

// Close ends the session and the connection.
func (p *raftProbe) Close() error { return errors.Join(p.sess.Close(), p.nc.Close()) }

// callOutcome is what a node did with a forged call.
type callOutcome struct {
	closed bool   // the node closed the stream
	status byte   // else, the answer's status
	text   string // and its payload
}

func (o callOutcome) String() string {
	if o.closed {
		return "stream closed"
	}
	return fmt.Sprintf("answered status %d %q", o.status, o.text)
}

// call opens a call stream and writes raw, then reads the node's answer
// or its closing of the stream. cut ends the probe's side of the stream
// after raw, as a peer that stopped in the middle of a frame.
func (p *raftProbe) call(raw []byte, cut bool) (callOutcome, error) {
	st, err := p.sess.OpenStream()
	if err != nil {
		return callOutcome{}, err
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	open := frame.Append(nil, []byte{raftVersion, raftStreamCalls})
	if _, err := st.Write(append(open, raw...)); err != nil {
		return callOutcome{}, err
	}
	if cut {
		if err := st.Close(); err != nil { // yamux: a half-close
			return callOutcome{}, err
		}
	}
	body, err := frame.Read(st, 1, 1<<20)
	switch {
	case closedByPeer(err):
		return callOutcome{closed: true}, nil
	case err != nil:
		return callOutcome{}, err
	}
	return callOutcome{status: body[0], text: string(body[1:])}, nil
}

// raftRequest is a request frame of kind for group with payload.
func raftRequest(kind byte, group string, payload []byte) []byte {
	body := []byte{kind}
	body = binary.AppendUvarint(body, uint64(len(group)))
	body = append(body, group...)
	return frame.Append(nil, append(body, payload...))
}

// raftForgery is a forged call, whether the node may answer it with an
// error instead of closing the stream, and whether the probe ends its side
// of the stream after writing it (a frame cut short).
type raftForgery struct {
	name      string
	raw       []byte
	mayAnswer bool
	cut       bool
}

// raftForgeries are calls that claim far more than they hold. The
// AppendEntries payloads are in the binary form of multiraft/aecodec.go;
// the node must refuse them without allocating for the claim.
func raftForgeries() []raftForgery {
	// The request's fields before its entries: ProtocolVersion 0, no ID,
	// Addr or Leader, Term 1, the three indexes 0, no flags.
	head := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0}
	// 2^32-1 entries, holding one {Index 1, Term 1}.
	entries := binary.AppendUvarint(append([]byte(nil), head...), 1<<32-1)
	entries = append(entries, 1, 1, 0, 0, 0, 0)
	// One entry whose Data claims 4 GiB-256, holding 16 bytes.
	data := append(append([]byte(nil), head...), 1, 1, 1, 0)
	data = binary.AppendUvarint(data, 1<<32-256)
	data = append(data, make([]byte, 16)...)
	// A heartbeat frame announcing 5,000,000 heartbeats and holding none.
	hearts := binary.AppendUvarint(nil, 5_000_000)
	// Frames announcing 2 GiB-1 (over multiraft's 1 GiB MaxFrame) and
	// 1 GiB (at it), holding 16 bytes.
	frameOf := func(size uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, size)
		b = append(b, raftCallAppend, 4)
		b = append(b, "meta"...)
		return append(b, make([]byte, 10)...)
	}
	return []raftForgery{
		{"AppendEntries claiming 2^32-1 entries", raftRequest(raftCallAppend, "meta", entries), true, false},
		{"AppendEntries entry claiming 4 GiB of data", raftRequest(raftCallAppend, "meta", data), true, false},
		{"heartbeats frame claiming 5,000,000 heartbeats", raftRequest(raftCallHearts, "", hearts), false, false},
		{"frame claiming 2 GiB", frameOf(1<<31 - 1), false, false},
		{"frame claiming 1 GiB, cut short", frameOf(1 << 30), false, true},
	}
}

// caseRaftForgery sends the leader of topicKnown forged calls on its Raft
// port, one stream each, and a bad handshake. Each must close the stream
// (or, for a payload raft's decoder rejects, be refused with an error
// answer); the node goes on serving.
func caseRaftForgery(ctx context.Context, t *testing.T, e *badEnv) string {
	l, err := e.c.Leader(ctx, topicKnown, 0)
	must(t, err)
	addr := e.c.Node(l.Node).RaftAddr
	p, err := dialRaft(ctx, addr)
	must(t, err)
	defer p.Close()
	var notes []string
	for _, f := range raftForgeries() {
		out, err := p.call(f.raw, f.cut)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		t.Logf("%s: %v", f.name, out)
		if !out.closed && !(f.mayAnswer && out.status == raftStatusRemote) {
			t.Fatalf("%s: %v; want the stream closed", f.name, out)
		}
		if out.closed {
			notes = append(notes, "closed")
		} else {
			notes = append(notes, "refused")
		}
	}
	if err := badHandshake(ctx, addr); err != nil {
		t.Fatal(err)
	}
	return strings.Join(notes, ", ") + "; bad handshake closed"
}

// badHandshake opens a connection to a Raft port, sends garbage where
// the handshake belongs, and checks that the node closes it.
func badHandshake(ctx context.Context, addr string) error {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		return err
	}
	var b [16]byte
	n, err := nc.Read(b[:])
	if !closedByPeer(err) {
		return fmt.Errorf("bad handshake answered %q, %v; want the connection closed", b[:n], err)
	}
	return nil
}
