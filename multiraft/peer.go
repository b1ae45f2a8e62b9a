package multiraft

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// peer is this Host's side of one peer address: the session it dialed
// there (its only session to the peer; the peer's own calls come over the
// session the peer dialed), the call streams idle on it, the heartbeat
// sender, and the liveness watch.
type peer struct {
	h    *Host
	addr string

	mu       sync.Mutex      // guards every field below
	sess     *yamux.Session  // the open session, or nil (dial on next use)
	inc      uint64          // the incarnation that answered the last dial; 0 before the first
	dialing  *dialAttempt    // the dial in progress, or nil
	idle     []*yamux.Stream // call streams of sess, ready for reuse
	hb       *hbSender       // started on the first heartbeat
	watch    *watch          // nil unless WatchPeer
	reported bool            // a loss was reported and no session was established since
	closed   bool            // Host.Close: refuse everything
	// failed is the error of the last dial if it failed, at failedAt:
	// calls within Tuning.WatchRetryMin of it get it without dialing, so
	// that thousands of groups calling a dead peer do not redial it each.
	failed   error
	failedAt time.Time

	// calls holds a token per call in flight to the peer (heartbeat
	// frames aside): at most Tuning.MaxCallsPerPeer, so that a burst of
	// calls (thousands of groups electing) waits here, each until its own
	// deadline, instead of in yamux's stream open, which waits for ever.
	// Election calls (votes, pre-votes, TimeoutNow) have tokens of their
	// own, electionCallsPerPeer of them: behind the appends of hundreds of
	// new leaders, votes waited past their election timeouts.
	calls, elections chan struct{}
}

// dialAttempt is a dial in progress; done is closed when err is set.
type dialAttempt struct {
	done chan struct{}
	err  error
}

// peer returns the peer at addr, creating it on first use.
func (h *Host) peer(addr string) (*peer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	p := h.peers[addr]
	if p == nil {
		p = &peer{h: h, addr: addr, calls: make(chan struct{}, h.tun.MaxCallsPerPeer),
			elections: make(chan struct{}, electionCallsPerPeer)}
		h.peers[addr] = p
	}
	return p, nil
}

func (p *peer) fail(op string, err error) error {
	var pe *PeerError
	if errors.As(err, &pe) || errors.Is(err, ErrClosed) {
		return err
	}
	return &PeerError{Op: op, Addr: p.addr, Err: err}
}

// current returns the open session, or nil.
func (p *peer) current() *yamux.Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sess != nil && p.sess.IsClosed() {
		p.sess = nil
	}
	return p.sess
}

// session returns the open session to the peer, dialing one if there is
// none. One caller dials at a time; the others wait for its outcome, each
// until its own deadline.
func (p *peer) session(deadline time.Time) (*yamux.Session, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		if p.sess != nil && !p.sess.IsClosed() {
			s := p.sess
			p.mu.Unlock()
			return s, nil
		}
		a := p.dialing
		if a == nil {
			break // dial, holding mu
		}
		p.mu.Unlock()
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-a.done:
			timer.Stop()
			if a.err != nil {
				return nil, a.err
			}
		case <-timer.C:
			return nil, p.fail("dial", ErrCallTimeout)
		case <-p.h.ctx.Done():
			timer.Stop()
			return nil, ErrClosed
		}
	}
	if p.failed != nil && time.Since(p.failedAt) < p.h.tun.WatchRetryMin {
		err := p.failed
		p.mu.Unlock()
		return nil, err
	}
	a := &dialAttempt{done: make(chan struct{})}
	p.dialing = a
	p.mu.Unlock()

	sess, inc, err := p.dial(deadline)

	p.mu.Lock()
	p.dialing = nil
	if err == nil && p.closed {
		_ = sess.Close()
		err = ErrClosed
	}
	var stale []*yamux.Stream
	restarted := false
	p.failed, p.failedAt = err, time.Now()
	if err == nil {
		restarted = p.watch != nil && p.inc != 0 && inc != p.inc && !p.reported
		p.sess, p.inc, p.reported = sess, inc, false
		stale, p.idle = p.idle, nil
	} else {
		p.h.stats.dialsFailed.Add(1)
	}
	a.err = err
	close(a.done)
	p.mu.Unlock()
	for _, s := range stale {
		_ = s.Close()
	}
	if restarted {
		p.lost("peer restarted", nil, false)
	}
	return sess, err
}

// dial connects to the peer, runs the handshake and starts a yamux
// session, giving up at deadline or when the Host closes.
func (p *peer) dial(deadline time.Time) (*yamux.Session, uint64, error) {
	ctx, cancel := context.WithDeadline(p.h.ctx, deadline)
	defer cancel()
	d := net.Dialer{LocalAddr: p.h.src}
	c, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, 0, p.fail("dial", err)
	}
	// Only ctx sets a deadline, so a deadline error means ctx ended.
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	if p.h.clientTLS != nil {
		tc := tls.Client(c, p.h.clientTLS)
		if err = tc.Handshake(); err == nil {
			err = p.h.checkDialled(tc, p.addr)
		}
		c = tc
	}
	var inc uint64
	if err == nil {
		inc, err = handshake(c)
	}
	if !stop() || ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = c.Close()
		return nil, 0, p.fail("dial", err)
	}
	sess, err := yamux.Client(&coalescingConn{Conn: c}, p.h.yamux)
	if err != nil {
		_ = c.Close()
		return nil, 0, p.fail("dial", err)
	}
	p.h.stats.sessionsDialed.Add(1)
	return sess, inc, nil
}

// handshake sends the dialer's half of the handshake and reads the reply.
func handshake(c net.Conn) (uint64, error) {
	if _, err := c.Write(append([]byte(handshakeMagic), protocolVersion)); err != nil {
		return 0, err
	}
	return readHandshakeReply(c)
}

// electionCallsPerPeer is how many election calls may be in flight to a
// peer besides Tuning.MaxCallsPerPeer others; together they stay below
// yamux's AcceptBacklog (256).
const electionCallsPerPeer = 64

// tokens is the token pool of a call of kind (see peer.calls).
func (p *peer) tokens(kind byte) chan struct{} {
	switch kind {
	case callRequestVote, callRequestPreVote, callTimeoutNow:
		return p.elections
	}
	return p.calls
}

// acquireCall takes a token for a call of kind, waiting until deadline at
// most; release it with releaseCall.
func (p *peer) acquireCall(kind byte, deadline time.Time) error {
	pool := p.tokens(kind)
	select {
	case pool <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case pool <- struct{}{}:
		return nil
	case <-t.C:
		return p.fail("call", fmt.Errorf("%w: %d calls to the peer in flight", ErrCallTimeout, cap(pool)))
	case <-p.h.ctx.Done():
		return ErrClosed
	}
}

func (p *peer) releaseCall(kind byte) { <-p.tokens(kind) }

// callStream returns an idle call stream to the peer, or opens a new one;
// fresh reports that the stream's open frame has not been sent yet.
func (p *peer) callStream(deadline time.Time) (st *yamux.Stream, fresh bool, err error) {
	sess, err := p.session(deadline)
	if err != nil {
		return nil, false, err
	}
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		st = p.idle[n-1]
		p.idle = p.idle[:n-1]
	}
	p.mu.Unlock()
	if st != nil {
		return st, false, nil
	}
	st, err = sess.OpenStream()
	if err != nil {
		return nil, false, p.fail("call", err)
	}
	p.h.stats.streamsOpened.Add(1)
	return st, true, nil
}

// release puts a call stream that finished its call cleanly back for
// reuse, or closes it.
func (p *peer) release(st *yamux.Stream) {
	p.mu.Lock()
	if !p.closed && p.sess == st.Session() && len(p.idle) < p.h.tun.MaxIdleStreams {
		p.idle = append(p.idle, st)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	_ = st.Close()
}

// close is Host.Close's: the session and its streams close, and nothing
// is dialed again.
func (p *peer) close() {
	p.mu.Lock()
	p.closed = true
	sess, idle := p.sess, p.idle
	p.sess, p.idle = nil, nil
	if p.watch != nil {
		p.watch.cancel()
	}
	p.mu.Unlock()
	for _, s := range idle {
		_ = s.Close()
	}
	if sess != nil {
		_ = sess.Close()
	}
}

// drop closes the session after a protocol error, so that the next call
// dials a fresh one.
func (p *peer) drop(sess *yamux.Session) {
	p.mu.Lock()
	if p.sess == sess {
		p.sess = nil
	}
	p.mu.Unlock()
	_ = sess.Close()
}

// isEOF reports whether err only says that a stream or session ended.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, yamux.ErrSessionShutdown) ||
		errors.Is(err, yamux.ErrStreamClosed) || errors.Is(err, yamux.ErrConnectionReset)
}
