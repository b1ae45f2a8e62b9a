package raftmux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// HeartbeatChannel is the channel on which Muxes exchange coalesced
// heartbeats: one connection per pair of peers and direction.
const HeartbeatChannel = "raft-hb"

// errLegacyPeer means the peer's Mux does not serve HeartbeatChannel; the
// group sends the heartbeat over its own connection instead.
var errLegacyPeer = errors.New("raftmux: peer does not serve coalesced heartbeats")

const (
	// legacyRecheck is how long heartbeats to a peer that refused
	// HeartbeatChannel go over their groups' own connections before the
	// channel is tried again (the peer may have been upgraded).
	legacyRecheck = 30 * time.Second
	// hbMaxEntries caps one frame; with fitsFrame's field limits a frame
	// stays below hbMaxFrame.
	hbMaxEntries = 1024
)

// hbStats are the heartbeat counters reported by Stats.
type hbStats struct {
	hbFramesSent, hbSent, hbFallback, hbFramesReceived, hbReceived, hbDials atomic.Uint64
}

// hbCall is one heartbeat waiting in a peer's queue or frame.
type hbCall struct {
	t        *GroupTransport
	entry    hbEntry
	deadline time.Time     // now + the group's Timeout when queued
	done     chan struct{} // closed by finish
	resp     raft.AppendEntriesResponse
	err      error
}

// finish records the outcome and wakes the waiter. Only the peer's loop
// calls it, once per call.
func (c *hbCall) finish(resp raft.AppendEntriesResponse, err error) {
	c.resp, c.err = resp, err
	close(c.done)
}

// heartbeat sends one heartbeat of t's group to the Mux at addr in the next
// frame and waits for its answer, the group's Timeout, or t's Close.
func (m *Mux) heartbeat(t *GroupTransport, addr string, args *raft.AppendEntriesRequest) (raft.AppendEntriesResponse, error) {
	c := &hbCall{
		t: t,
		entry: hbEntry{group: t.group, req: raft.AppendEntriesRequest{
			RPCHeader: args.RPCHeader, Term: args.Term, Leader: args.Leader,
		}},
		deadline: time.Now().Add(t.timeout),
		done:     make(chan struct{}),
	}
	p, err := m.peer(addr)
	if err == nil {
		err = p.enqueue(c)
	}
	if errors.Is(err, errLegacyPeer) {
		m.hbFallback.Add(1)
	}
	if err != nil {
		return raft.AppendEntriesResponse{}, err
	}
	select {
	case <-c.done: // answered, failed, or timed out by the loop
		return c.resp, c.err
	case <-t.closed: // the group is shutting down: do not hold raft up
		return raft.AppendEntriesResponse{}, raft.ErrTransportShutdown
	}
}

// peer returns the sender for addr, starting it on first use.
func (m *Mux) peer(addr string) (*hbPeer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, &ChannelError{Op: "heartbeat", Addr: addr, Channel: HeartbeatChannel, Err: ErrClosed}
	}
	p := m.peers[addr]
	if p == nil {
		p = &hbPeer{m: m, addr: addr, kick: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
		p.timer.Stop()
		m.peers[addr] = p
		m.wg.Add(1) // under mu with closed false: Close has not reached wg.Wait
		go p.run()
	}
	return p, nil
}

// registerGroup makes t's group answer coalesced heartbeats.
func (m *Mux) registerGroup(t *GroupTransport) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groups[t.group] = t
	close(m.groupAdded)
	m.groupAdded = make(chan struct{})
}

// awaitGroup returns the open transport of group, waiting up to d for it
// to open, or nil.
func (m *Mux) awaitGroup(group string, d time.Duration) *GroupTransport {
	if t := m.lookupGroup(group); t != nil {
		return t // the usual case: no timer
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		m.mu.Lock()
		t, added := m.groups[group], m.groupAdded
		m.mu.Unlock()
		if t != nil {
			return t
		}
		select {
		case <-added:
		case <-timer.C:
			return nil
		case <-m.done:
			return nil
		}
	}
}

// unregisterGroup stops t's group answering coalesced heartbeats, unless a
// newer transport of the same group replaced it.
func (m *Mux) unregisterGroup(t *GroupTransport) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.groups[t.group] == t {
		delete(m.groups, t.group)
	}
}

// lookupGroup returns the open transport of group, or nil.
func (m *Mux) lookupGroup(group string) *GroupTransport {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.groups[group]
}

// hbPeer coalesces the heartbeats of every group to one peer address. Its
// loop goroutine, owned by the Mux, waits for a first queued heartbeat,
// waits out the window, sends one frame with everything queued on its one
// connection, waits for the answer and hands each heartbeat its response.
// One frame is in flight at a time; heartbeats queued meanwhile go in the
// next. A connection error fails the frame's heartbeats and drops the
// connection; the next frame dials again.
type hbPeer struct {
	m    *Mux
	addr string
	kick chan struct{} // capacity 1: the queue became non-empty

	mu          sync.Mutex // guards queue, spare, first, legacyUntil, stopped
	queue       []*hbCall  // waiting for the next frame, in arrival order
	spare       []*hbCall  // the previous frame's slice, reused as the next queue
	first       time.Time  // when queue became non-empty
	legacyUntil time.Time  // until then the peer is known not to serve HeartbeatChannel
	stopped     bool       // the loop has ended: refuse new calls

	// Owned by the loop goroutine.
	timer   *time.Timer
	conn    *trackedConn  // nil: dial before the next frame
	r       *bufio.Reader // reads conn
	nextID  uint64
	buf     []byte    // encoded request frame
	live    []*hbCall // the calls of the frame being sent
	entries []hbEntry // their entries
}

// enqueue adds c to the next frame. It returns errLegacyPeer if the peer
// is known not to serve coalesced heartbeats.
func (p *hbPeer) enqueue(c *hbCall) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return &ChannelError{Op: "heartbeat", Addr: p.addr, Channel: HeartbeatChannel, Err: ErrClosed}
	}
	if !p.legacyUntil.IsZero() {
		if time.Now().Before(p.legacyUntil) {
			return errLegacyPeer
		}
		p.legacyUntil = time.Time{}
	}
	p.queue = append(p.queue, c)
	if len(p.queue) == 1 {
		p.first = time.Now()
		select {
		case p.kick <- struct{}{}:
		default: // already kicked
		}
	}
	return nil
}

func (p *hbPeer) run() {
	defer p.m.wg.Done()
	defer p.stop()
	for {
		select {
		case <-p.kick: // a heartbeat is queued
		case <-p.m.done: // Mux closed
			return
		}
		p.mu.Lock()
		wait := p.m.hbWindow - time.Since(p.first)
		p.mu.Unlock()
		if wait > 0 {
			p.timer.Reset(wait)
			select {
			case <-p.timer.C: // window over
			case <-p.m.done: // Mux closed
				p.timer.Stop()
				return
			}
		}
		p.mu.Lock()
		calls := p.queue
		if len(calls) > hbMaxEntries {
			p.queue = append(p.spare[:0], calls[hbMaxEntries:]...)
			calls = calls[:hbMaxEntries]
			p.first = time.Time{} // the rest has waited long enough
			select {
			case p.kick <- struct{}{}:
			default:
			}
		} else {
			p.queue = p.spare[:0]
		}
		p.spare = nil
		p.mu.Unlock()

		p.send(calls)

		clear(calls)
		p.mu.Lock()
		p.spare = calls[:0]
		p.mu.Unlock()
	}
}

// stop refuses new calls, fails the queued ones and closes the connection.
func (p *hbPeer) stop() {
	p.mu.Lock()
	p.stopped = true
	q := p.queue
	p.queue = nil
	p.mu.Unlock()
	err := &ChannelError{Op: "heartbeat", Addr: p.addr, Channel: HeartbeatChannel, Err: ErrClosed}
	for _, c := range q {
		c.finish(raft.AppendEntriesResponse{}, err)
	}
	p.dropConn()
}

func (p *hbPeer) dropConn() {
	if p.conn != nil {
		_ = p.conn.Close()
		p.conn, p.r = nil, nil
	}
}

// send sends calls as one frame and finishes every one of them.
func (p *hbPeer) send(calls []*hbCall) {
	now := time.Now()
	var earliest time.Time
	p.live, p.entries = p.live[:0], p.entries[:0]
	for _, c := range calls {
		switch {
		case c.t.isClosed(): // its waiter has returned already
			c.finish(raft.AppendEntriesResponse{}, raft.ErrTransportShutdown)
		case !now.Before(c.deadline):
			c.finish(raft.AppendEntriesResponse{}, p.fail(ErrHeartbeatTimeout))
		default:
			if earliest.IsZero() || c.deadline.Before(earliest) {
				earliest = c.deadline
			}
			p.live = append(p.live, c)
			p.entries = append(p.entries, c.entry)
		}
	}
	defer func() { clear(p.live); clear(p.entries) }()
	if len(p.live) == 0 {
		return
	}
	failAll := func(err error) {
		for _, c := range p.live {
			c.finish(raft.AppendEntriesResponse{}, err)
		}
	}
	if p.conn == nil {
		if err := p.dial(earliest); err != nil {
			if errors.Is(err, ErrUnknownChannel) {
				p.mu.Lock()
				p.legacyUntil = time.Now().Add(legacyRecheck)
				p.mu.Unlock()
				p.m.log.Info("peer does not serve coalesced heartbeats; using per-group connections", "peer", p.addr)
				p.m.hbFallback.Add(uint64(len(p.live)))
				failAll(errLegacyPeer)
				return
			}
			failAll(p.fail(err))
			return
		}
	}
	p.nextID++
	p.buf = appendRequestFrame(p.buf[:0], p.nextID, p.entries)
	results, err := p.exchange(earliest)
	if err != nil {
		p.dropConn()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = ErrHeartbeatTimeout
		}
		failAll(p.fail(err))
		return
	}
	p.m.hbFramesSent.Add(1)
	p.m.hbSent.Add(uint64(len(p.live)))
	for i, c := range p.live {
		r := &results[i]
		if r.status == hbOK {
			c.finish(r.resp, nil)
			continue
		}
		c.finish(raft.AppendEntriesResponse{}, &ChannelError{Op: "heartbeat", Addr: p.addr,
			Channel: RaftChannelPrefix + c.entry.group, Err: statusError(r)})
	}
}

// exchange writes p.buf and reads the matching response by deadline.
func (p *hbPeer) exchange(deadline time.Time) ([]hbResult, error) {
	_ = p.conn.SetDeadline(deadline)
	if _, err := p.conn.Write(p.buf); err != nil {
		return nil, err
	}
	body, err := readFrame(p.r)
	if err != nil {
		return nil, err
	}
	id, results, err := decodeResponse(body)
	if err != nil {
		return nil, err
	}
	if id != p.nextID || len(results) != len(p.live) {
		return nil, fmt.Errorf("%w: heartbeat response %d with %d entries to frame %d with %d",
			ErrProtocol, id, len(results), p.nextID, len(p.live))
	}
	return results, nil
}

// dial connects to the peer's HeartbeatChannel, giving up at deadline or
// when the Mux closes.
func (p *hbPeer) dial(deadline time.Time) error {
	ctx, cancel := context.WithDeadline(p.m.ctx, deadline)
	defer cancel()
	c, err := p.m.Dial(ctx, p.addr, HeartbeatChannel)
	if err != nil {
		return err
	}
	tc, ok := p.m.hbDialed.add(c)
	if !ok {
		return ErrClosed
	}
	p.m.hbDials.Add(1)
	p.conn, p.r = tc, bufio.NewReaderSize(tc, 16<<10)
	return nil
}

// fail wraps a frame-level error for the waiters.
func (p *hbPeer) fail(err error) error {
	var ce *ChannelError
	if errors.As(err, &ce) {
		return err
	}
	return &ChannelError{Op: "heartbeat", Addr: p.addr, Channel: HeartbeatChannel, Err: err}
}

// statusError turns a non-OK response status into an error.
func statusError(r *hbResult) error {
	switch r.status {
	case hbUnknownGroup:
		return ErrUnknownGroup
	case hbNoResponse:
		return fmt.Errorf("%w: the group's handler returned without an answer (its raft is shutting down, or the answer comes later)", ErrNoHeartbeatResponse)
	case hbBusy:
		return fmt.Errorf("%w: the group's previous heartbeat is still being handled", ErrNoHeartbeatResponse)
	case hbSlow:
		return fmt.Errorf("%w: the group's handler overran", ErrNoHeartbeatResponse)
	case hbRemoteError:
		return &RemoteError{Msg: r.msg}
	}
	return fmt.Errorf("%w: heartbeat status %d", ErrProtocol, r.status)
}
