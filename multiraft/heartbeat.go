package multiraft

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/internal/frame"
)

// Heartbeats. Each raft leader sends every follower an empty AppendEntries
// every tenth of its heartbeat timeout or so; with hundreds of groups that
// is most of an idle node's traffic and CPU. So a heartbeat does not travel
// alone: it joins a queue per peer, whose sender waits
// Tuning.HeartbeatWindow after the first one and sends everything queued
// as one heartbeat frame. The peer calls each group's heartbeat handler in
// turn and answers them all in one frame, in order.
//
// A handler that overruns Tuning.HeartbeatHandlerTimeout is abandoned and
// its heartbeat answered statusSlow, so that one stuck group never holds up
// the others. And raft's handler is quick except when it must first persist
// a newer term (a bbolt commit and fsync): when the heartbeat's term is
// newer than the member's, or the same and the member is not a follower
// (an older term is refused at once). When hundreds
// of groups elect at once, hundreds of such heartbeats queue in the same
// frames and add up to seconds, every other heartbeat in them comes too
// late, and more elections follow. Such a heartbeat therefore runs in a
// goroutine of its own (the heartbeat guard) and is answered
// statusNoResponse at once; raft retries it within its back-off. While a
// group's heartbeat is being handled, its next one is answered statusBusy.

// hbCall is one heartbeat waiting in a peer's queue or frame.
type hbCall struct {
	t        *transport
	entry    hbEntry
	deadline time.Time     // when queued, plus CallTimeout
	done     chan struct{} // closed by finish
	resp     raft.AppendEntriesResponse
	err      error
}

// finish records the outcome and wakes the waiter; the sender calls it
// once per call.
func (c *hbCall) finish(resp raft.AppendEntriesResponse, err error) {
	c.resp, c.err = resp, err
	close(c.done)
}

// heartbeat sends one heartbeat to the peer at addr in its next frame and
// waits for the answer, CallTimeout, or the group's Close.
func (t *transport) heartbeat(addr string, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if t.isClosed() {
		return raft.ErrTransportShutdown
	}
	p, err := t.h.peer(addr)
	if err != nil {
		return err
	}
	if err := t.awaitPeerUp(p); err != nil {
		return err
	}
	c := &hbCall{
		t: t,
		entry: hbEntry{group: t.group, req: raft.AppendEntriesRequest{
			RPCHeader: args.RPCHeader, Term: args.Term, Leader: args.Leader, Quiesce: args.Quiesce,
		}},
		deadline: time.Now().Add(t.h.tun.CallTimeout),
		done:     make(chan struct{}),
	}
	if err := p.heartbeats().enqueue(c); err != nil {
		return err
	}
	select {
	case <-c.done: // answered, failed, or timed out by the sender
		if c.err == nil {
			*resp = c.resp
		}
		return c.err
	case <-t.closed: // the group is shutting down: do not hold raft up
		return raft.ErrTransportShutdown
	}
}

// hbSender coalesces the heartbeats of every group to one peer. Its loop,
// owned by the Host, waits for a first queued heartbeat, waits out the
// window, and sends one frame with everything queued; one frame is in
// flight at a time, and heartbeats queued meanwhile go in the next.
type hbSender struct {
	p    *peer
	kick chan struct{} // capacity 1: the queue became non-empty

	mu      sync.Mutex // guards queue, first, stopped
	queue   []*hbCall  // waiting for the next frame, in arrival order
	first   time.Time  // when queue became non-empty
	stopped bool       // the loop has ended: refuse new calls

	// entries and buf are exchange's, reused from frame to frame (only the
	// loop sends): a frame is sent every window to every peer.
	entries []hbEntry
	buf     []byte
}

// heartbeats returns the peer's sender, starting it on first use.
func (p *peer) heartbeats() *hbSender {
	p.mu.Lock()
	s, start := p.hb, p.hb == nil
	if start {
		s = &hbSender{p: p, kick: make(chan struct{}, 1)}
		p.hb = s
	}
	p.mu.Unlock()
	if start && !p.h.goOwned(s.run) { // the Host is closed
		s.stop()
	}
	return s
}

// enqueue adds c to the next frame.
func (s *hbSender) enqueue(c *hbCall) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrClosed
	}
	s.queue = append(s.queue, c)
	if len(s.queue) == 1 {
		s.first = time.Now()
		select {
		case s.kick <- struct{}{}:
		default: // already kicked
		}
	}
	return nil
}

func (s *hbSender) run() {
	defer s.stop()
	h := s.p.h
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-s.kick: // a heartbeat is queued
		case <-h.ctx.Done():
			return
		}
		s.mu.Lock()
		wait := h.tun.HeartbeatWindow - time.Since(s.first)
		s.mu.Unlock()
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C: // window over
			case <-h.ctx.Done():
				timer.Stop()
				return
			}
		}
		s.mu.Lock()
		calls := s.queue
		if n := h.tun.MaxHeartbeatsPerFrame; len(calls) > n {
			s.queue = append([]*hbCall(nil), calls[n:]...)
			calls = calls[:n]
			s.first = time.Time{} // the rest has waited long enough
			select {
			case s.kick <- struct{}{}:
			default:
			}
		} else {
			s.queue = nil
		}
		s.mu.Unlock()
		s.send(calls)
	}
}

// stop refuses new calls and fails the queued ones.
func (s *hbSender) stop() {
	s.mu.Lock()
	s.stopped = true
	q := s.queue
	s.queue = nil
	s.mu.Unlock()
	for _, c := range q {
		c.finish(raft.AppendEntriesResponse{}, ErrClosed)
	}
}

// send sends calls as one frame and finishes every one of them.
func (s *hbSender) send(calls []*hbCall) {
	now := time.Now()
	var earliest time.Time
	live := calls[:0]
	for _, c := range calls {
		switch {
		case c.t.isClosed(): // its waiter has returned already
			c.finish(raft.AppendEntriesResponse{}, raft.ErrTransportShutdown)
		case !now.Before(c.deadline):
			c.finish(raft.AppendEntriesResponse{}, s.p.fail("heartbeat", ErrCallTimeout))
		default:
			if earliest.IsZero() || c.deadline.Before(earliest) {
				earliest = c.deadline
			}
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return
	}
	results, err := s.exchange(live, earliest)
	if err != nil {
		for _, c := range live {
			c.finish(raft.AppendEntriesResponse{}, err)
		}
		return
	}
	for i, c := range live {
		r := &results[i]
		if r.status == statusOK {
			c.finish(r.resp, nil)
			continue
		}
		c.finish(raft.AppendEntriesResponse{}, &PeerError{Op: "heartbeat", Addr: s.p.addr,
			Err: fmt.Errorf("group %q: %w", c.entry.group, heartbeatStatusError(r))})
	}
}

// exchange sends one frame on a call stream and reads its answer by
// deadline.
func (s *hbSender) exchange(calls []*hbCall, deadline time.Time) ([]hbResult, error) {
	p := s.p
	st, fresh, err := p.callStream(deadline)
	if err != nil {
		return nil, p.fail("heartbeat", err)
	}
	entries := s.entries[:0]
	for _, c := range calls {
		entries = append(entries, c.entry)
	}
	buf := s.buf[:0]
	if fresh {
		buf = appendOpen(buf, streamCalls, "")
	}
	buf = appendHeartbeats(buf, entries)
	clear(entries) // keep no request of a finished call alive
	s.entries, s.buf = entries[:0], buf[:0]
	_ = st.SetDeadline(deadline)
	_, err = st.Write(buf) // yamux is done with buf when Write returns, also on a timeout (it copies)
	var body []byte
	if err == nil {
		body, err = frame.Read(st, 1, uint32(p.h.tun.MaxFrame))
	}
	var results []hbResult
	if err == nil {
		if body[0] != statusOK {
			err = fmt.Errorf("%w: heartbeat frame answered with status %d", ErrProtocol, body[0])
		} else {
			results, err = parseHeartbeatResults(body[1:], len(calls))
		}
	}
	if err != nil {
		_ = st.Close()
		if isTimeout(err) {
			err = ErrCallTimeout
		}
		return nil, p.fail("heartbeat", err)
	}
	_ = st.SetDeadline(time.Time{})
	p.h.live.answered(p.addr, st.Session(), time.Now())
	p.release(st)
	p.h.stats.hbFramesSent.Add(1)
	p.h.stats.hbSent.Add(uint64(len(calls)))
	return results, nil
}

// heartbeatStatusError turns a heartbeat's non-OK status into an error.
func heartbeatStatusError(r *hbResult) error {
	switch r.status {
	case statusUnknownGroup:
		return ErrUnknownGroup
	case statusNoResponse:
		return fmt.Errorf("%w: the heartbeat handler returned without an answer (raft shutting down, or the answer comes later)", ErrNoResponse)
	case statusBusy:
		return fmt.Errorf("%w: the group's previous heartbeat is still being handled", ErrNoResponse)
	case statusSlow:
		return fmt.Errorf("%w: the group's heartbeat handler overran", ErrNoResponse)
	case statusRemoteError:
		return &RemoteError{Msg: r.msg}
	}
	return fmt.Errorf("%w: heartbeat status %d", ErrProtocol, r.status)
}

// hbBatch answers one heartbeat frame. Workers call the entries' handlers
// one after another; the serving goroutine watches the running handler and,
// when it overruns HeartbeatHandlerTimeout, answers its entry statusSlow
// and hands the rest of the frame to a new worker. The old worker leaves
// when its handler returns.
type hbBatch struct {
	h       *Host
	entries []hbEntry
	done    chan struct{} // closed by the worker that finds every entry answered

	mu       sync.Mutex // guards every field below
	results  []hbResult
	turn     uint64    // the current worker's number
	next     int       // the first entry whose handler has not been called
	cur      int       // the entry whose handler runs, or -1
	curStart time.Time // when cur's handler was called
}

// serveHeartbeats answers a heartbeat frame's payload with the response
// frame's payload; a frame with a heartbeat not sent by node (the
// session's, 0 without TLS) is refused whole.
func (h *Host) serveHeartbeats(payload []byte, node int32) ([]byte, error) {
	entries, err := parseHeartbeats(payload, h.tun.MaxHeartbeatsPerFrame)
	if err != nil {
		return nil, err
	}
	for i := range entries {
		if err := h.checkSender(node, entries[i].req.RPCHeader); err != nil {
			h.log.Warn("refused a heartbeat frame", "group", entries[i].group, "err", err)
			return nil, err
		}
	}
	h.stats.hbFramesReceived.Add(1)
	h.stats.hbReceived.Add(uint64(len(entries)))
	b := &hbBatch{h: h, entries: entries, done: make(chan struct{}),
		results: make([]hbResult, len(entries)), cur: -1}
	if !h.goOwned(func() { b.work(0) }) {
		return nil, ErrClosed
	}
	tick := time.NewTicker(h.tun.HeartbeatHandlerTimeout / 2)
	defer tick.Stop()
	for {
		select {
		case <-b.done:
			b.mu.Lock()
			defer b.mu.Unlock()
			return appendHeartbeatResults(nil, b.results), nil
		case <-tick.C:
			b.check()
		case <-h.ctx.Done():
			return nil, ErrClosed
		}
	}
}

// work is worker number turn's loop.
func (b *hbBatch) work(turn uint64) {
	for {
		b.mu.Lock()
		if b.turn != turn {
			b.mu.Unlock()
			return // handed over while our handler ran; its entry is answered
		}
		if b.next == len(b.entries) {
			b.mu.Unlock()
			close(b.done)
			return
		}
		i := b.next
		b.next, b.cur, b.curStart = i+1, i, time.Now()
		b.mu.Unlock()

		r := b.h.handleHeartbeat(&b.entries[i])

		b.mu.Lock()
		if b.turn == turn {
			b.results[i], b.cur = r, -1
		}
		b.mu.Unlock()
	}
}

// check hands the frame to a new worker if the running handler overran.
func (b *hbBatch) check() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur < 0 || time.Since(b.curStart) < b.h.tun.HeartbeatHandlerTimeout {
		return
	}
	b.results[b.cur], b.cur = hbResult{status: statusSlow}, -1
	b.turn++
	turn := b.turn
	if !b.h.goOwned(func() { b.work(turn) }) {
		// The Host is closing; serveHeartbeats returns on its ctx.
		return
	}
}

// handleHeartbeat calls the heartbeat handler of e's group and returns its
// answer. raft's handler (processHeartbeat) answers before it returns, or
// not at all when raft is shutting down.
func (h *Host) handleHeartbeat(e *hbEntry) hbResult {
	t := h.lookupGroup(e.group)
	if t == nil {
		return hbResult{status: statusUnknownGroup}
	}
	fn := t.handler.Load()
	if fn == nil {
		return hbResult{status: statusUnknownGroup}
	}
	if !t.busy.CompareAndSwap(false, true) {
		return hbResult{status: statusBusy}
	}
	respCh := make(chan raft.RPCResponse, 1)
	req := e.req
	t.noteLeader(&req)
	rpc := raft.RPC{Command: &req, RespChan: respCh}
	if t.writesTerm(&req) {
		if !t.inBackground(func() { (*fn)(rpc) }) {
			t.busy.Store(false)
		}
		return hbResult{status: statusNoResponse}
	}
	if !t.track() {
		t.busy.Store(false)
		return hbResult{status: statusUnknownGroup}
	}
	(*fn)(rpc)
	t.bg.Done()
	t.busy.Store(false)
	select {
	case r := <-respCh:
		if r.Error != nil {
			return hbResult{status: statusRemoteError, msg: r.Error.Error()}
		}
		resp, ok := r.Response.(*raft.AppendEntriesResponse)
		if !ok || resp == nil {
			return hbResult{status: statusRemoteError, msg: "heartbeat handler answered with an unexpected type"}
		}
		return hbResult{status: statusOK, resp: *resp}
	default:
		return hbResult{status: statusNoResponse}
	}
}

// writesTerm reports whether raft will persist a term before answering the
// heartbeat (the heartbeat guard): a newer term, or the current one to a
// member that is not a follower. An older term is refused at once, with
// the member's term, which the leader must see to step down.
func (t *transport) writesTerm(req *raft.AppendEntriesRequest) bool {
	v := t.view.Load()
	if v == nil {
		return false
	}
	term := (*v).CurrentTerm()
	return req.Term > term || (req.Term == term && (*v).State() != raft.Follower)
}

// track counts a heartbeat being handled in bg, so that Close waits for
// it: the group closes its log store after its transport, and raft must
// not write its term to a closed store. It reports false, counting
// nothing, once the transport is closed.
func (t *transport) track() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.isClosed() {
		return false
	}
	t.bg.Add(1)
	return true
}

// inBackground runs f (a heartbeat handler) on a goroutine that Close
// waits for, and clears busy when it returns; false if the transport is
// closed.
func (t *transport) inBackground(f func()) bool {
	if !t.track() {
		return false
	}
	go func() {
		defer t.bg.Done()
		defer t.busy.Store(false)
		f()
	}()
	return true
}

// isTimeout reports whether err is a deadline that passed.
func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}
