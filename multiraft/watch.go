package multiraft

import (
	"context"
	"time"

	"github.com/hashicorp/raft"
)

// Liveness. A watched peer (WatchPeer) always has a session from this Host:
// when it ends, the watch redials at once. When the peer's process ends,
// its kernel closes the connection, so the watch learns of a crashed or
// killed peer in milliseconds instead of after raft's heartbeat timeouts.
// The peer is reported lost when the redial fails, or when the handshake
// answers with a new incarnation (the peer restarted in between, whoever
// dialed); either way its groups lost whatever leaderships they held, and
// the groups it led get successors at once (failover.go). A session that
// breaks while the same incarnation answers the redial is not reported. A
// peer that stops answering without its connection closing (a paused
// process, a dead host, a partition) is found when a keepalive ping goes
// unanswered (Tuning.KeepAliveInterval, SessionWriteTimeout), and before
// that by raft's own timeouts.

// watch is one watched peer; its goroutine is owned by the Host.
type watch struct {
	node   int32
	cancel context.CancelFunc
}

// WatchPeer starts watching node at addr: its groups get successors here
// as soon as it is found lost. Watching an address again replaces the
// node id; this Host's own address is ignored.
func (h *Host) WatchPeer(node int32, addr string) {
	if addr == h.addr {
		return
	}
	p, err := h.peer(addr)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.watch != nil {
		p.watch.node = node
		p.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(h.ctx)
	p.watch = &watch{node: node, cancel: cancel}
	p.mu.Unlock()
	if !h.goOwned(func() { p.watchLoop(ctx) }) || !h.goOwned(func() { p.pingLoop(ctx) }) {
		cancel()
	}
}

// UnwatchPeer stops watching addr (a node that left the cluster).
func (h *Host) UnwatchPeer(addr string) {
	p := h.peerAt(addr)
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.watch != nil {
		p.watch.cancel()
		p.watch = nil
	}
	p.mu.Unlock()
}

// PeerUp reports whether addr is watched and this Host holds an open
// session to it now: the peer's process runs, as far as TCP can tell.
func (h *Host) PeerUp(addr string) bool {
	p := h.peerAt(addr)
	if p == nil {
		return false
	}
	watched, open := p.watchState()
	return watched && open
}

// watchState reports whether p is watched and whether it has an open
// session.
func (p *peer) watchState() (watched, open bool) {
	p.mu.Lock()
	watched = p.watch != nil
	p.mu.Unlock()
	return watched, p.current() != nil
}

// down reports whether p is watched and has no session: lost, and not
// redialed yet.
func (p *peer) down() bool {
	watched, open := p.watchState()
	return watched && !open
}

// nodeUp is PeerUp for a node id, through Config.Resolve.
func (h *Host) nodeUp(node int32) (string, bool) {
	if h.resolve == nil {
		return "", false
	}
	addr, ok := h.resolve(node)
	return addr, ok && h.PeerUp(addr)
}

// nodeDown reports whether node is watched and has no session: lost, and
// not redialed yet.
func (h *Host) nodeDown(node int32) bool {
	if h.resolve == nil {
		return false
	}
	addr, ok := h.resolve(node)
	if !ok {
		return false
	}
	p := h.peerAt(addr)
	return p != nil && p.down()
}

// peerAt is the peer at addr, or nil if this Host never called it.
func (h *Host) peerAt(addr string) *peer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peers[addr]
}

// watchLoop keeps a session to the peer until ctx ends.
func (p *peer) watchLoop(ctx context.Context) {
	backoff := p.h.tun.WatchRetryMin
	for ctx.Err() == nil {
		sess, err := p.session(time.Now().Add(p.h.tun.DialTimeout))
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.unreachable(err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, p.h.tun.WatchRetryMax)
			continue
		}
		backoff = p.h.tun.WatchRetryMin
		select {
		case <-sess.CloseChan():
		case <-ctx.Done():
			return
		}
	}
}

// unreachable reports the peer lost if it was seen and has not been
// reported since.
func (p *peer) unreachable(err error) {
	p.mu.Lock()
	report := p.inc != 0 && !p.reported && p.watch != nil
	p.mu.Unlock()
	if report {
		p.lost("session ended and the peer cannot be reached", err, true)
	}
}

// lost logs and reports the loss of the peer to failoverLoop. mark says
// that the loss stays reported until a session is established again (an
// unreachable peer); a restart is reported once, by the dial that found it.
func (p *peer) lost(why string, err error, mark bool) {
	p.mu.Lock()
	w := p.watch
	if w == nil || p.reported {
		p.mu.Unlock()
		return
	}
	p.reported = mark
	node := w.node
	p.mu.Unlock()
	p.h.stats.peersLost.Add(1)
	p.h.log.Info("raft peer lost", "peer", node, "addr", p.addr, "why", why, "err", err)
	select {
	case p.h.losses <- node:
	case <-p.h.ctx.Done():
	}
}

// downPeerWait bounds how long a heartbeat to a peer the watch finds down
// waits for it to come back (awaitPeerUp).
const downPeerWait = time.Second

// awaitPeerUp holds a heartbeat to a watched peer whose session is down
// until it is back, for downPeerWait at most, or the group closes (raft's
// Shutdown waits for its heartbeat goroutines, so Close must not). Failed
// at once, raft retries each of its leaders' heartbeats to the peer two
// to four times a second: at 10,000 partitions, 10,000 failures a second
// on each survivor of a kill -9, a fifth of its CPU while it elected.
func (t *transport) awaitPeerUp(p *peer) error {
	if alive, _ := t.h.vouch(p.addr); alive {
		return nil // the usual case, without the peer's lock: a session answers
	}
	var timer *time.Timer
	for {
		changed := t.h.livenessChanged() // before looking: no change is missed
		if !p.down() {
			return nil
		}
		if timer == nil {
			timer = time.NewTimer(downPeerWait)
			defer timer.Stop()
		}
		select {
		case <-changed:
		case <-timer.C:
			return p.fail("heartbeat", ErrPeerDown)
		case <-t.closed:
			return raft.ErrTransportShutdown
		case <-t.g.stop: // Close: raft's Shutdown waits for this goroutine
			return raft.ErrTransportShutdown
		}
	}
}
