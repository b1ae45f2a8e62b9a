package raftmux

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// LivenessChannel carries one idle connection from a Mux to each peer it
// watches (WatchPeer). The acceptor writes its incarnation, 8 bytes drawn
// at random when its Mux started, and then only waits for the connection
// to end; the dialer reads the incarnation and waits too. Nothing else is
// ever sent. When the peer's process ends, its kernel closes the
// connection at once, so the watcher learns of a crashed or killed peer in
// milliseconds instead of after raft's heartbeat timeouts.
//
// A connection that ends is redialed at once. The peer is reported lost
// (Config.OnPeerLost) when that redial fails, or when the peer answers
// with a new incarnation (it restarted in between): either way the peer's
// raft groups lost whatever leaderships they held. A connection that
// breaks while the same incarnation answers the redial is not reported. A
// peer that stops answering without closing its connections (a paused
// process, a dead host, a partition) is not detected here; raft's own
// timeouts cover it.
const LivenessChannel = "raft-live"

// Liveness timings: how long a dial (and the incarnation) may take, and
// how often an unreachable or not-yet-started peer is tried again.
const (
	liveDialTimeout = 2 * time.Second
	liveRetryMin    = 100 * time.Millisecond
	liveRetryMax    = time.Second
)

// liveStats are the liveness counters reported by Stats.
type liveStats struct {
	liveDials, peersLost atomic.Uint64
}

// newIncarnation draws this Mux's incarnation; never 0, which watchers
// use for "none seen yet".
func newIncarnation() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
		if v := binary.BigEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// serveLiveness holds one peer's liveness connection (see serveEach)
// until the peer closes it or Mux.Close does (it is one of the accepted
// conns).
func (m *Mux) serveLiveness(c net.Conn) {
	defer m.wg.Done()
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(liveDialTimeout))
	if _, err := c.Write(binary.BigEndian.AppendUint64(nil, m.incarnation)); err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, c) // until the peer or Close ends it
}

// peerWatch is one watched peer; its goroutine is owned by the Mux.
type peerWatch struct {
	m      *Mux
	addr   string
	ctx    context.Context // ended by UnwatchPeer or Mux.Close
	cancel context.CancelFunc
	up     atomic.Bool // a liveness connection to the peer is open
}

// WatchPeer starts watching the Mux at addr (see LivenessChannel) and
// calls Config.OnPeerLost with addr whenever it is found lost. Watching an
// address already watched, this Mux's own address, or with no OnPeerLost
// set does nothing.
func (m *Mux) WatchPeer(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.onPeerLost == nil || addr == m.addr.String() || m.watches[addr] != nil {
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	w := &peerWatch{m: m, addr: addr, ctx: ctx, cancel: cancel}
	m.watches[addr] = w
	m.wg.Add(1) // under mu with closed false: Close has not reached wg.Wait
	go w.run()
}

// PeerUp reports whether the watch of addr holds an open liveness
// connection now: the peer's process is running (as far as TCP can tell).
// It is false for an address not watched.
func (m *Mux) PeerUp(addr string) bool {
	m.mu.Lock()
	w := m.watches[addr]
	m.mu.Unlock()
	return w != nil && w.up.Load()
}

// UnwatchPeer stops watching addr (a node that left the cluster). Its
// goroutine ends soon after; Mux.Close waits for it.
func (m *Mux) UnwatchPeer(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w := m.watches[addr]; w != nil {
		w.cancel()
		delete(m.watches, addr)
	}
}

// run keeps one liveness connection to the peer and reports its loss.
func (w *peerWatch) run() {
	defer w.m.wg.Done()
	var (
		inc     uint64 // the incarnation last seen; 0 before the first
		up      bool   // connected to inc and not reported lost since
		backoff = liveRetryMin
	)
	for w.ctx.Err() == nil {
		c, got, err := w.connect()
		if w.ctx.Err() != nil {
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if err != nil {
			if up {
				up = false
				w.lost("connection ended and the peer cannot be reached", err)
			}
			wait := backoff
			backoff = min(2*backoff, liveRetryMax)
			if errors.Is(err, ErrUnknownChannel) {
				wait = legacyRecheck // a peer without the channel: nothing to watch
			}
			select {
			case <-w.ctx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		if up && got != inc {
			w.lost("peer restarted", nil)
		}
		inc, up, backoff = got, true, liveRetryMin
		w.up.Store(true)
		w.hold(c)
		w.up.Store(false)
	}
}

// connect dials the peer's liveness channel and reads its incarnation.
func (w *peerWatch) connect() (*trackedConn, uint64, error) {
	ctx, cancel := context.WithTimeout(w.ctx, liveDialTimeout)
	defer cancel()
	nc, err := w.m.Dial(ctx, w.addr, LivenessChannel)
	if err != nil {
		return nil, 0, err
	}
	c, ok := w.m.liveDialed.add(nc)
	if !ok {
		return nil, 0, ErrClosed
	}
	w.m.liveDials.Add(1)
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	var b [8]byte
	_, err = io.ReadFull(c, b[:])
	stop()
	if err != nil {
		_ = c.Close()
		return nil, 0, &ChannelError{Op: "liveness", Addr: w.addr, Channel: LivenessChannel, Err: err}
	}
	return c, binary.BigEndian.Uint64(b[:]), nil
}

// hold waits for c to end (the peer closed it, or this watch or the Mux
// ended) and closes it.
func (w *peerWatch) hold(c *trackedConn) {
	stop := context.AfterFunc(w.ctx, func() { _ = c.Close() })
	defer stop()
	defer c.Close()
	_, _ = io.Copy(io.Discard, c)
}

// lost counts, logs and reports the loss of the peer.
func (w *peerWatch) lost(why string, err error) {
	w.m.peersLost.Add(1)
	w.m.log.Info("raft peer lost", "peer", w.addr, "why", why, "error", err)
	w.m.onPeerLost(w.addr)
}
