package main

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// refusalsToGiveUp is how many refused connections each seed must give,
// with no broker ever reached, before a command gives up early. Two rounds
// rather than one, so that a node restarting at that instant is not taken
// for a wrong address.
const refusalsToGiveUp = 2

// reach dials for the client (client.Dialer) and watches the outcome, to
// tell "nothing listens at --brokers" from a slow cluster. When giveUp is
// set, it is called with an *UnreachableError as soon as every seed has
// refused refusalsToGiveUp connections and no dial ever succeeded. After
// watchListeners, a connection the broker closes has its address probed
// (once) for the security it expects (probeListener).
type reach struct {
	seeds  []string
	giveUp context.CancelCauseFunc // nil: never give up early

	// Set by watchListeners before the first dial, then read-only.
	probeCtx   context.Context // ends the probes
	usesTLS    bool
	usesSASL   bool
	onMismatch context.CancelCauseFunc // nil: no probes
	probes     sync.WaitGroup          // the probe goroutines

	mu       sync.Mutex // guards the fields below
	reached  bool       // some dial succeeded
	refused  map[string]int
	last     map[string]error // last dial error per address
	probed   map[string]bool  // addresses probed or being probed
	stopped  bool             // wait was called: no more probes
	mismatch *ListenerMismatchError
}

func newReach(seeds []string, giveUp context.CancelCauseFunc) *reach {
	return &reach{seeds: seeds, giveUp: giveUp, refused: map[string]int{}, last: map[string]error{}, probed: map[string]bool{}}
}

// watchListeners makes the connections dial returns report a close by the
// broker: its address is then probed, within ctx, and a mismatch is given
// to onMismatch. Called before the first dial; wait stops the probes.
func (r *reach) watchListeners(ctx context.Context, usesTLS, usesSASL bool, onMismatch context.CancelCauseFunc) {
	r.probeCtx, r.usesTLS, r.usesSASL, r.onMismatch = ctx, usesTLS, usesSASL, onMismatch
}

// wait starts no more probes and waits for those running to end; their
// context must be done or ending.
func (r *reach) wait() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.probes.Wait()
}

// closedByBroker probes addr, once, in the background.
func (r *reach) closedByBroker(addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probed[addr] || r.stopped || r.probeCtx.Err() != nil {
		return
	}
	r.probed[addr] = true
	r.probes.Add(1)
	go func() {
		defer r.probes.Done()
		var me *ListenerMismatchError
		if errors.As(probeListener(r.probeCtx, addr, r.usesTLS, r.usesSASL), &me) {
			r.mu.Lock()
			r.mismatch = me
			r.mu.Unlock()
			r.onMismatch(me)
		}
	}()
}

// mismatched returns what a probe found, or nil.
func (r *reach) mismatched() *ListenerMismatchError {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mismatch
}

// watchedConn tells its reach when the broker closes the connection.
type watchedConn struct {
	net.Conn
	r    *reach
	addr string
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if closedByPeer(err) {
		c.r.closedByBroker(c.addr)
	}
	return n, err
}

// Close also reports a connection the broker had closed first: under TLS
// the client reads the broker's close at the TLS layer, never this EOF.
// Waiting a millisecond tells that from a close of the client's own.
func (c *watchedConn) Close() error {
	if c.r.usesTLS {
		c.Conn.SetReadDeadline(time.Now().Add(time.Millisecond))
		var b [1]byte
		if _, err := c.Conn.Read(b[:]); closedByPeer(err) {
			c.r.closedByBroker(c.addr)
		}
	}
	return c.Conn.Close()
}

func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// dial is a client.DialFunc.
func (r *reach) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.reached = true
		if r.onMismatch != nil {
			return &watchedConn{Conn: c, r: r, addr: addr}, nil
		}
		return c, nil
	}
	if ctx.Err() != nil {
		return nil, err // our own cancellation says nothing about the broker
	}
	r.last[addr] = err
	if errors.Is(err, syscall.ECONNREFUSED) {
		r.refused[addr]++
	}
	if r.giveUp != nil && !r.reached && r.allRefusedLocked() {
		r.giveUp(r.unreachableLocked())
	}
	return nil, err
}

func (r *reach) allRefusedLocked() bool {
	for _, s := range r.seeds {
		if r.refused[s] < refusalsToGiveUp {
			return false
		}
	}
	return len(r.seeds) > 0
}

// unreachable returns an *UnreachableError if no dial ever succeeded and
// every seed was tried, nil otherwise.
func (r *reach) unreachable() *UnreachableError {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reached {
		return nil
	}
	for _, s := range r.seeds {
		if r.last[s] == nil {
			return nil
		}
	}
	return r.unreachableLocked()
}

func (r *reach) unreachableLocked() *UnreachableError {
	e := &UnreachableError{Addrs: append([]string(nil), r.seeds...)}
	for _, s := range r.seeds {
		e.Reasons = append(e.Reasons, r.last[s])
	}
	return e
}
