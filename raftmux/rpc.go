package raftmux

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// RPCChannel carries the small RPCs of elections (RequestVote,
// RequestPreVote, TimeoutNow) of every group: one connection per pair of
// peers and direction, any number of calls in flight on it, answered in
// any order.
//
// Without it each of these RPCs needs a connection of its group's own. In
// a mass election (a new topic of 1000 partitions, or a node holding
// hundreds of leaderships dying) every failed vote closed its connection
// and the retry dialled a new one, the acceptor allocating raft's 512 KiB
// of connection buffers each time, until dials themselves timed out and no
// group elected for minutes (seen with 1000 groups on 3 nodes of 2 cores).
// Only leaders' replication (AppendEntries with entries, snapshots) still
// uses the group's connections, and those stay open.
const RPCChannel = "raft-rpc"

// Frames, both ways:
//
//	uint32  big-endian length of the rest (1..rpcMaxFrame)
//	uint64  call id, chosen by the caller; a response carries its request's
//	byte    request: kind (rpcVote, rpcPreVote, rpcTimeoutNow); response: status
//	request:  uint16 group name length, the group name, the msgpack request
//	response: rpcOK: the msgpack response; rpcRemoteError: the error text;
//	          others: nothing
//
// msgpack is raft's own encoding of these structs (NetworkTransport's).
// A malformed frame closes the connection.
const rpcMaxFrame = 1 << 20

// rpcOpenGrace is how long an RPC for a group not open here waits for it
// to open before it is answered rpcUnknownGroup: a quarter of
// DefaultTimeout, so that the caller still gets the answer in time.
const rpcOpenGrace = DefaultTimeout / 4

const (
	rpcVote       byte = 1
	rpcPreVote    byte = 2
	rpcTimeoutNow byte = 3
)

const (
	rpcOK           byte = 0
	rpcUnknownGroup byte = 1
	rpcRemoteError  byte = 2
	rpcNoResponse   byte = 3 // the group's raft did not take or answer it in time
)

// rpcStats are the RPC counters reported by Stats.
type rpcStats struct {
	rpcSent, rpcFallback, rpcReceived, rpcDials atomic.Uint64
}

var msgpackHandle = &codec.MsgpackHandle{}

// rpcResult is what a caller waiting for a response gets.
type rpcResult struct {
	status byte
	body   []byte
	err    error // the connection failed before the response came
}

// rpcPeer is this Mux's outbound RPC connection to one peer.
type rpcPeer struct {
	m    *Mux
	addr string

	mu          sync.Mutex   // guards conn, dialing, nextID, legacyUntil and every conn's pending
	conn        *rpcConn     // nil until dialed and after it fails
	dialing     *dialAttempt // the dial in progress, or nil
	nextID      uint64
	legacyUntil time.Time // until then the peer is known not to serve RPCChannel
}

// rpcConn is one dialed connection and the calls waiting on it.
type rpcConn struct {
	c       *trackedConn
	wmu     sync.Mutex                // guards writes to c
	pending map[uint64]chan rpcResult // under the peer's mu; nil once failed
}

// rpcPeerFor returns the RPC peer for addr, creating it on first use.
func (m *Mux) rpcPeerFor(addr string) (*rpcPeer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, &ChannelError{Op: "rpc", Addr: addr, Channel: RPCChannel, Err: ErrClosed}
	}
	p := m.rpcPeers[addr]
	if p == nil {
		p = &rpcPeer{m: m, addr: addr}
		m.rpcPeers[addr] = p
	}
	return p, nil
}

// call sends one RPC of t's group to the Mux at addr and decodes the answer
// into resp. It returns errLegacyPeer if the peer does not serve
// RPCChannel.
func (m *Mux) call(t *GroupTransport, addr string, kind byte, req, resp any) error {
	select {
	case <-t.closed:
		return raft.ErrTransportShutdown
	default:
	}
	p, err := m.rpcPeerFor(addr)
	if err != nil {
		return err
	}
	frame, err := appendRPCRequest(nil, kind, t.group, req)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(t.timeout)
	ch := make(chan rpcResult, 1)
	rc, id, err := p.send(deadline, frame, ch)
	if errors.Is(err, errLegacyPeer) {
		m.rpcFallback.Add(1)
	}
	if err != nil {
		return err
	}
	m.rpcSent.Add(1)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var r rpcResult
	select {
	case r = <-ch:
	case <-timer.C:
		p.forget(rc, id)
		return p.fail(ErrRPCTimeout)
	case <-t.closed:
		p.forget(rc, id)
		return raft.ErrTransportShutdown
	}
	switch {
	case r.err != nil:
		return p.fail(r.err)
	case r.status == rpcOK:
		if err := codec.NewDecoderBytes(r.body, msgpackHandle).Decode(resp); err != nil {
			return p.fail(fmt.Errorf("%w: %v", ErrProtocol, err))
		}
		return nil
	case r.status == rpcUnknownGroup:
		return ErrUnknownGroup
	case r.status == rpcNoResponse:
		return ErrNoRPCResponse
	case r.status == rpcRemoteError:
		return &RemoteError{Msg: string(r.body)}
	}
	return p.fail(fmt.Errorf("%w: RPC status %d", ErrProtocol, r.status))
}

// send writes frame (its id filled in here) on the peer's connection,
// dialing it first if needed, and registers ch for the answer. It gives up
// at deadline, also while another call is dialing.
func (p *rpcPeer) send(deadline time.Time, frame []byte, ch chan rpcResult) (*rpcConn, uint64, error) {
	rc, err := p.connect(deadline)
	if err != nil {
		return nil, 0, err
	}
	p.mu.Lock()
	if rc.pending == nil { // failed since connect returned it
		p.mu.Unlock()
		return nil, 0, p.fail(io.ErrClosedPipe)
	}
	p.nextID++
	id := p.nextID
	rc.pending[id] = ch
	p.mu.Unlock()

	binary.BigEndian.PutUint64(frame[4:], id)
	rc.wmu.Lock()
	_ = rc.c.SetWriteDeadline(deadline)
	_, err = rc.c.Write(frame)
	rc.wmu.Unlock()
	if err != nil {
		p.mu.Lock()
		p.failConn(rc, err) // also answers ch, unless the answer came first
		p.mu.Unlock()
		return nil, 0, p.fail(err)
	}
	return rc, id, nil
}

// dialAttempt is a dial in progress; done is closed when err is set.
type dialAttempt struct {
	done chan struct{}
	err  error
}

// connect returns the peer's connection, dialing it if there is none. One
// call dials at a time, without holding mu; the others wait for its
// outcome, each until its own deadline.
func (p *rpcPeer) connect(deadline time.Time) (*rpcConn, error) {
	p.mu.Lock()
	if !p.legacyUntil.IsZero() {
		if time.Now().Before(p.legacyUntil) {
			p.mu.Unlock()
			return nil, errLegacyPeer
		}
		p.legacyUntil = time.Time{}
	}
	if rc := p.conn; rc != nil {
		p.mu.Unlock()
		return rc, nil
	}
	if a := p.dialing; a != nil {
		p.mu.Unlock()
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		select {
		case <-a.done:
		case <-timer.C:
			return nil, p.fail(ErrRPCTimeout)
		}
		p.mu.Lock()
		rc := p.conn
		p.mu.Unlock()
		switch {
		case rc != nil:
			return rc, nil
		case errors.Is(a.err, ErrUnknownChannel):
			return nil, errLegacyPeer
		case a.err != nil:
			return nil, p.fail(a.err)
		}
		return nil, p.fail(io.ErrClosedPipe) // dialed, and failed already
	}
	a := &dialAttempt{done: make(chan struct{})}
	p.dialing = a
	p.mu.Unlock()

	rc, err := p.dial(deadline)

	p.mu.Lock()
	p.dialing = nil
	a.err = err
	switch {
	case err == nil:
		p.conn = rc
	case errors.Is(err, ErrUnknownChannel):
		p.legacyUntil = time.Now().Add(legacyRecheck)
	}
	close(a.done)
	p.mu.Unlock()
	switch {
	case err == nil:
		return rc, nil
	case errors.Is(err, ErrUnknownChannel):
		return nil, errLegacyPeer
	}
	return nil, p.fail(err)
}

// dial connects to the peer's RPCChannel and starts the goroutine reading
// its answers.
func (p *rpcPeer) dial(deadline time.Time) (*rpcConn, error) {
	ctx, cancel := context.WithDeadline(p.m.ctx, deadline)
	defer cancel()
	c, err := p.m.Dial(ctx, p.addr, RPCChannel)
	if err != nil {
		return nil, err
	}
	tc, ok := p.m.rpcDialed.add(c)
	if !ok {
		return nil, ErrClosed
	}
	p.m.rpcDials.Add(1)
	rc := &rpcConn{c: tc, pending: make(map[uint64]chan rpcResult)}
	p.m.mu.Lock()
	if p.m.closed {
		p.m.mu.Unlock()
		_ = tc.Close()
		return nil, ErrClosed
	}
	p.m.wg.Add(1) // under m.mu with closed false: Close has not reached wg.Wait
	p.m.mu.Unlock()
	go p.readAnswers(rc)
	return rc, nil
}

// readAnswers hands each response on rc to its caller until rc fails or
// closes. It is owned by the Mux (Close closes rc).
func (p *rpcPeer) readAnswers(rc *rpcConn) {
	defer p.m.wg.Done()
	r := bufio.NewReaderSize(rc.c, 16<<10)
	for {
		body, err := readSizedFrame(r, rpcMaxFrame, "RPC")
		if err == nil && len(body) < 9 {
			err = fmt.Errorf("%w: RPC response of %d bytes", ErrProtocol, len(body))
		}
		if err != nil {
			p.mu.Lock()
			p.failConn(rc, err)
			p.mu.Unlock()
			return
		}
		id := binary.BigEndian.Uint64(body)
		p.mu.Lock()
		ch := rc.pending[id]
		delete(rc.pending, id)
		p.mu.Unlock()
		if ch != nil { // else the caller gave up
			ch <- rpcResult{status: body[8], body: body[9:]}
		}
	}
}

// failConn closes rc and fails its waiting calls. Called with mu held.
func (p *rpcPeer) failConn(rc *rpcConn, err error) {
	_ = rc.c.Close()
	if p.conn == rc {
		p.conn = nil
	}
	for _, ch := range rc.pending {
		ch <- rpcResult{err: err}
	}
	rc.pending = nil
}

// forget drops a call whose caller stopped waiting.
func (p *rpcPeer) forget(rc *rpcConn, id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(rc.pending, id)
}

// fail wraps an error for the caller.
func (p *rpcPeer) fail(err error) error {
	var ce *ChannelError
	if errors.As(err, &ce) || errors.Is(err, ErrClosed) {
		return err
	}
	return &ChannelError{Op: "rpc", Addr: p.addr, Channel: RPCChannel, Err: err}
}

// serveRPCs serves one peer's RPC connection (see serveEach).
func (m *Mux) serveRPCs(c net.Conn) { (&rpcServer{m: m, conn: c}).read() }

// rpcServer answers the RPCs of one inbound connection, each in its own
// goroutine, as they complete.
type rpcServer struct {
	m    *Mux
	conn net.Conn
	wmu  sync.Mutex // guards writes to conn
}

func (s *rpcServer) read() {
	defer s.m.wg.Done()
	r := bufio.NewReaderSize(s.conn, 16<<10)
	for {
		body, err := readSizedFrame(r, rpcMaxFrame, "RPC")
		var (
			id          uint64
			kind        byte
			group, args []byte
		)
		if err == nil {
			id, kind, group, args, err = decodeRPCRequest(body)
		}
		if err != nil {
			_ = s.conn.Close()
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !s.m.isClosed() {
				s.m.log.Debug("RPC connection closed", "remote", s.conn.RemoteAddr().String(), "error", err)
			}
			return
		}
		s.m.rpcReceived.Add(1)
		s.m.wg.Add(1) // this goroutine holds the count above zero
		go s.answer(id, kind, string(group), args)
	}
}

func (s *rpcServer) answer(id uint64, kind byte, group string, args []byte) {
	defer s.m.wg.Done()
	status, body := s.m.serveRPC(kind, group, args)
	frame := appendRPCFrame(nil, id, status, body)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(DefaultTimeout))
	if _, err := s.conn.Write(frame); err != nil {
		_ = s.conn.Close()
	}
}

// serveRPC hands one RPC to its group's raft and returns the answer.
func (m *Mux) serveRPC(kind byte, group string, args []byte) (status byte, body []byte) {
	// A group's members open it at about the same time, and its first
	// candidate may ask for votes before a peer has: such an RPC waits a
	// little for the group instead of failing the candidate's election
	// (which raft would retry only after its election timeout).
	t := m.awaitGroup(group, rpcOpenGrace)
	if t == nil {
		return rpcUnknownGroup, nil
	}
	var cmd any
	switch kind {
	case rpcVote:
		cmd = new(raft.RequestVoteRequest)
	case rpcPreVote:
		cmd = new(raft.RequestPreVoteRequest)
	case rpcTimeoutNow:
		cmd = new(raft.TimeoutNowRequest)
	}
	if err := codec.NewDecoderBytes(args, msgpackHandle).Decode(cmd); err != nil {
		return rpcRemoteError, []byte("bad request: " + err.Error())
	}
	// Give up before the caller does (its bound is the same Timeout), so
	// that it learns why.
	timer := time.NewTimer(t.timeout * 3 / 4)
	defer timer.Stop()
	respCh := make(chan raft.RPCResponse, 1)
	select {
	case t.consumer <- raft.RPC{Command: cmd, RespChan: respCh}:
	case <-timer.C:
		return rpcNoResponse, nil
	case <-t.closed:
		return rpcUnknownGroup, nil
	case <-m.done:
		return rpcNoResponse, nil
	}
	var r raft.RPCResponse
	select {
	case r = <-respCh:
	case <-timer.C:
		return rpcNoResponse, nil
	case <-t.closed:
		return rpcNoResponse, nil
	case <-m.done:
		return rpcNoResponse, nil
	}
	if r.Error != nil {
		return rpcRemoteError, []byte(r.Error.Error())
	}
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, msgpackHandle).Encode(r.Response); err != nil {
		return rpcRemoteError, []byte("encode response: " + err.Error())
	}
	return rpcOK, buf.Bytes()
}

// appendRPCRequest appends a request frame with id 0 (send fills it in).
func appendRPCRequest(b []byte, kind byte, group string, req any) ([]byte, error) {
	if len(group) > 0xFFFF {
		return nil, fmt.Errorf("%w: group name of %d bytes", ErrProtocol, len(group))
	}
	start := len(b)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, kind)
	b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
	b = append(b, group...)
	buf := bytes.NewBuffer(b)
	if err := codec.NewEncoder(buf, msgpackHandle).Encode(req); err != nil {
		return nil, fmt.Errorf("raftmux: encode RPC: %w", err)
	}
	b = buf.Bytes()
	if n := len(b) - start - 4; n > rpcMaxFrame {
		return nil, fmt.Errorf("%w: RPC of %d bytes", ErrProtocol, n)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b, nil
}

// appendRPCFrame appends a response frame.
func appendRPCFrame(b []byte, id uint64, status byte, body []byte) []byte {
	if len(body) > rpcMaxFrame-9 {
		status, body = rpcRemoteError, []byte("response too large")
	}
	b = binary.BigEndian.AppendUint32(b, uint32(9+len(body)))
	b = binary.BigEndian.AppendUint64(b, id)
	b = append(b, status)
	return append(b, body...)
}

// decodeRPCRequest splits a request frame's body (after the length).
func decodeRPCRequest(body []byte) (id uint64, kind byte, group, args []byte, err error) {
	if len(body) < 11 {
		return 0, 0, nil, nil, fmt.Errorf("%w: RPC request of %d bytes", ErrProtocol, len(body))
	}
	id, kind = binary.BigEndian.Uint64(body), body[8]
	n := int(binary.BigEndian.Uint16(body[9:]))
	rest := body[11:]
	if kind < rpcVote || kind > rpcTimeoutNow || n == 0 || n > len(rest) {
		return 0, 0, nil, nil, fmt.Errorf("%w: RPC request kind %d, group name of %d bytes", ErrProtocol, kind, n)
	}
	return id, kind, rest[:n], rest[n:], nil
}
