package multiraft

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"
)

// Quiescence. An idle group's raft costs timers: its leader heartbeats
// each follower ten times per heartbeat timeout, and each follower counts
// down to an election. hashicorp/raft as patched in third_party/raft lets
// an idle group go quiet while its transport vouches for the other side
// (raft.WithQuiescence); the Host vouches for a watched peer, for all its
// groups at once, while pings over the peer's session answer
// (Tuning.LivenessInterval) within Tuning.LivenessTimeout, or any call or
// heartbeat frame it answered did (under load, the answers that matter
// keep coming while a ping may wait behind them). A peer's epoch
// changes whenever the Host stops vouching for it or its session changes
// (it may have restarted), and every change is broadcast on one channel,
// which the quiet groups wait on instead of timers.
//
// Leaders that still heartbeat do so on one tick per peer and interval
// (heartbeatTick) instead of a timer per group and follower, so their
// heartbeats also leave together and share a frame.

// liveness is what the Host knows of its watched peers.
type liveness struct {
	mu      sync.RWMutex // guards every field below
	peers   map[string]*peerLive
	epoch   uint64        // the last epoch handed out, across peers
	changed chan struct{} // closed and replaced at each change
	ticks   map[tickKey]*ticker
}

// peerLive is one watched peer's vouch.
type peerLive struct {
	alive bool
	epoch uint64
	sess  *yamux.Session // the session that answered last
	// answered is when (UnixNano) the peer last answered on sess: atomic,
	// so that recording an answer on the hot path takes only the read lock.
	answered atomic.Int64
}

type tickKey struct {
	addr     string
	interval time.Duration
}

// ticker closes ch at each tick and replaces it.
type ticker struct {
	mu sync.Mutex // guards ch
	ch chan struct{}
}

func newLiveness() liveness {
	return liveness{peers: map[string]*peerLive{}, changed: make(chan struct{}), ticks: map[tickKey]*ticker{}}
}

// broadcast wakes every waiter on changed. The caller holds mu.
func (l *liveness) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// vouch reports whether the Host vouches for the peer at addr, and the
// epoch.
func (h *Host) vouch(addr string) (bool, uint64) {
	if h.tun.DisableQuiescence {
		return false, 0
	}
	l := &h.live
	l.mu.RLock()
	defer l.mu.RUnlock()
	if p := l.peers[addr]; p != nil {
		return p.alive, p.epoch
	}
	return false, 0
}

// livenessChanged returns the channel closed at the next change.
func (h *Host) livenessChanged() <-chan struct{} {
	l := &h.live
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.changed
}

// answered records an answer (a ping's, a call's, a heartbeat frame's)
// that came over sess, a session this Host dialed to the peer at addr.
func (l *liveness) answered(addr string, sess *yamux.Session, now time.Time) {
	l.mu.RLock()
	p := l.peers[addr]
	if p != nil && p.alive && p.sess == sess {
		p.answered.Store(now.UnixNano())
		l.mu.RUnlock()
		return
	}
	l.mu.RUnlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if p = l.peers[addr]; p == nil {
		p = &peerLive{}
		l.peers[addr] = p
	}
	p.answered.Store(now.UnixNano())
	if p.alive && p.sess == sess {
		return
	}
	l.epoch++
	p.alive, p.sess, p.epoch = true, sess, l.epoch
	l.broadcast()
}

// lost stops vouching for the peer at addr.
func (l *liveness) lost(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.peers[addr]; p != nil && p.alive {
		l.epoch++
		p.alive, p.sess, p.epoch = false, nil, l.epoch
		l.broadcast()
	}
}

// expire stops vouching for every peer whose last answer is older than
// timeout.
func (l *liveness) expire(now time.Time, timeout time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := false
	for _, p := range l.peers {
		if p.alive && now.Sub(time.Unix(0, p.answered.Load())) > timeout {
			l.epoch++
			p.alive, p.sess, p.epoch = false, nil, l.epoch
			changed = true
		}
	}
	if changed {
		l.broadcast()
	}
}

// livenessLoop expires peers whose pings stopped answering. It is owned
// by the Host.
func (h *Host) livenessLoop() {
	defer h.wg.Done()
	t := time.NewTicker(h.tun.LivenessInterval)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case now := <-t.C:
			h.live.expire(now, h.tun.LivenessTimeout)
		}
	}
}

// pingLoop pings the watched peer over its session until ctx ends. It is
// owned by the Host.
func (p *peer) pingLoop(ctx context.Context) {
	l := &p.h.live
	defer l.lost(p.addr)
	t := time.NewTicker(p.h.tun.LivenessInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sess := p.current()
		if sess == nil {
			l.lost(p.addr)
			continue
		}
		if _, err := sess.Ping(); err != nil {
			l.lost(p.addr)
			continue
		}
		l.answered(p.addr, sess, time.Now())
	}
}

// heartbeatTick returns the channel closed at the next tick of the peer at
// addr and interval, starting its ticker on first use; nil once the Host
// is closing.
func (h *Host) heartbeatTick(addr string, interval time.Duration) <-chan struct{} {
	if h.tun.DisableQuiescence || interval <= 0 {
		return nil
	}
	l := &h.live
	k := tickKey{addr, interval}
	l.mu.RLock()
	tk := l.ticks[k]
	l.mu.RUnlock()
	if tk == nil {
		l.mu.Lock()
		if tk = l.ticks[k]; tk == nil {
			tk = &ticker{ch: make(chan struct{})}
			if !h.goOwned(func() { tk.run(h.ctx, interval) }) {
				l.mu.Unlock()
				return nil
			}
			l.ticks[k] = tk
		}
		l.mu.Unlock()
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	return tk.ch
}

// run ticks until ctx ends.
func (tk *ticker) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			tk.mu.Lock()
			close(tk.ch)
			tk.ch = make(chan struct{})
			tk.mu.Unlock()
		}
	}
}

// Vouch implements raft.WithQuiescence.
func (t *transport) Vouch(id raft.ServerID, addr raft.ServerAddress) (bool, uint64) {
	return t.h.vouch(t.peerAddr(id, addr))
}

// LivenessChanged implements raft.WithQuiescence.
func (t *transport) LivenessChanged() <-chan struct{} { return t.h.livenessChanged() }

// HeartbeatTick implements raft.WithQuiescence.
func (t *transport) HeartbeatTick(addr raft.ServerAddress, interval time.Duration) <-chan struct{} {
	return t.h.heartbeatTick(string(addr), interval)
}

var _ raft.WithQuiescence = (*transport)(nil)
