package multiraft

import (
	"context"
	"maps"
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

// liveness is what the Host knows of its watched peers. Thousands of raft
// goroutines read it on every loop (vouch, livenessChanged, heartbeatTick),
// so reads take no lock: under a read-write lock, the writers of every
// LivenessInterval (a lost peer's ping loop, expire) queued them behind
// each write (10,000 groups, kill -9 of a node: 2,800 goroutines of a
// survivor waiting at once, and every leader of the other survivor
// stepped down for want of a quorum).
type liveness struct {
	mu      sync.Mutex                           // serialises changes: epoch, new peers, broadcasts
	peers   atomic.Pointer[map[string]*peerLive] // copy on write, under mu
	epoch   uint64                               // the last epoch handed out, across peers
	changed atomic.Pointer[chan struct{}]        // closed and replaced at each change
	ticks   sync.Map                             // tickKey → *ticker; added under mu
}

// peerLive is one watched peer's vouch.
type peerLive struct {
	state atomic.Pointer[vouchState] // replaced under liveness.mu
	// answered is when (UnixNano) the peer last answered on state's sess.
	answered atomic.Int64
}

// vouchState is whether the Host vouches for a peer, in which epoch, and
// the session that answered last.
type vouchState struct {
	alive bool
	epoch uint64
	sess  *yamux.Session
}

type tickKey struct {
	addr     string
	interval time.Duration
}

// ticker closes ch at each tick and replaces it.
type ticker struct{ ch atomic.Pointer[chan struct{}] }

func (l *liveness) init() {
	l.peers.Store(&map[string]*peerLive{})
	ch := make(chan struct{})
	l.changed.Store(&ch)
}

// peer returns the state of the peer at addr, or nil.
func (l *liveness) peer(addr string) *peerLive { return (*l.peers.Load())[addr] }

// set records a new state for p in a new epoch and wakes every waiter on
// changed. The caller holds mu.
func (l *liveness) set(p *peerLive, alive bool, sess *yamux.Session) {
	l.epoch++
	p.state.Store(&vouchState{alive: alive, epoch: l.epoch, sess: sess})
	ch := make(chan struct{})
	close(*l.changed.Swap(&ch))
}

// vouch reports whether the Host vouches for the peer at addr, and the
// epoch.
func (h *Host) vouch(addr string) (bool, uint64) {
	if h.tun.DisableQuiescence {
		return false, 0
	}
	if p := h.live.peer(addr); p != nil {
		s := p.state.Load()
		return s.alive, s.epoch
	}
	return false, 0
}

// livenessChanged returns the channel closed at the next change.
func (h *Host) livenessChanged() <-chan struct{} { return *h.live.changed.Load() }

// answered records an answer (a ping's, a call's, a heartbeat frame's)
// that came over sess, a session this Host dialed to the peer at addr.
func (l *liveness) answered(addr string, sess *yamux.Session, now time.Time) {
	if p := l.peer(addr); p != nil {
		if s := p.state.Load(); s.alive && s.sess == sess {
			p.answered.Store(now.UnixNano())
			return
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.peer(addr)
	if p == nil {
		p = &peerLive{}
		p.state.Store(&vouchState{})
		m := maps.Clone(*l.peers.Load())
		m[addr] = p
		l.peers.Store(&m)
	}
	p.answered.Store(now.UnixNano())
	if s := p.state.Load(); !s.alive || s.sess != sess {
		l.set(p, true, sess)
	}
}

// lost stops vouching for the peer at addr.
func (l *liveness) lost(addr string) {
	if p := l.peer(addr); p == nil || !p.state.Load().alive {
		return // nothing to change: no lock, no waiting readers
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.peer(addr); p.state.Load().alive {
		l.set(p, false, nil)
	}
}

// expire stops vouching for every peer whose last answer is older than
// timeout, and returns their addresses.
func (l *liveness) expire(now time.Time, timeout time.Duration) (gone []string) {
	expired := func(p *peerLive) bool {
		return p.state.Load().alive && now.Sub(time.Unix(0, p.answered.Load())) > timeout
	}
	any := false
	for _, p := range *l.peers.Load() {
		any = any || expired(p)
	}
	if !any {
		return nil // nothing to change: no lock, no waiting readers
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for addr, p := range *l.peers.Load() {
		if expired(p) {
			l.set(p, false, nil)
			gone = append(gone, addr)
		}
	}
	return gone
}

// livenessLoop expires peers whose pings stopped answering. It is owned
// by the Host. While the Host runs many elections (after a loss, for a new
// topic) it waits twice LivenessTimeout: at 10,000 partitions the two
// survivors of a kill -9 (2 vCPUs for both) answered each other's pings
// late while they elected, stopped vouching for each other 3 s in, and
// every leader of theirs stepped down for want of a quorum.
func (h *Host) livenessLoop() {
	defer h.wg.Done()
	t := time.NewTicker(h.tun.LivenessInterval)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case now := <-t.C:
			timeout := h.livenessTimeout()
			for _, addr := range h.live.expire(now, timeout) {
				h.log.Info("no longer vouching for a peer: no answer within the liveness timeout",
					"addr", addr, "timeout", timeout)
			}
		}
	}
}

// livenessTimeout is how long a peer may go without answering before the
// Host stops vouching for it: LivenessTimeout, twice that while the Host
// runs many elections.
func (h *Host) livenessTimeout() time.Duration {
	if h.electing.Load() > 0 {
		return 2 * h.tun.LivenessTimeout
	}
	return h.tun.LivenessTimeout
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
	if tk, ok := l.ticks.Load(k); ok {
		return *tk.(*ticker).ch.Load()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if tk, ok := l.ticks.Load(k); ok {
		return *tk.(*ticker).ch.Load()
	}
	tk := &ticker{}
	ch := make(chan struct{})
	tk.ch.Store(&ch)
	if !h.goOwned(func() { tk.run(h.ctx, interval) }) {
		return nil
	}
	l.ticks.Store(k, tk)
	return ch
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
			ch := make(chan struct{})
			close(*tk.ch.Swap(&ch))
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

// beginMany and endMany count a loop running more elections than run at
// once (after a large loss, or for a large new topic) in manyElecting; the
// end of the last one is stamped for LeaseVouch.
func (h *Host) beginMany() { h.manyElecting.Add(1) }

func (h *Host) endMany() {
	if h.manyElecting.Add(-1) == 0 {
		h.manyEnded.Store(time.Now().UnixNano())
	}
}

// LeaseVouch implements raft.WithLeaseVouch: while this Host runs more
// elections than run at once, and for twice LivenessTimeout after, a
// leader counts a follower whose node it vouches for as contacted. At
// 10,000 partitions the two survivors of a kill -9 (2 vCPUs for both)
// answered each other's groups more than a lease timeout late 2.5 s into
// their elections while their pings still answered, and 1,800 of the 3,333
// new leaders stepped down, which put the last partition's fail-over past
// 10 s; without the time after, 700 stepped down the moment the elections
// ended. A follower that stops answering pings (livenessTimeout) loses the
// vouch and the lease applies. Smaller losses keep raft's lease: their
// elections do not load the survivors so.
func (t *transport) LeaseVouch(id raft.ServerID, addr raft.ServerAddress) bool {
	h := t.h
	if h.manyElecting.Load() == 0 && time.Since(time.Unix(0, h.manyEnded.Load())) > 2*h.tun.LivenessTimeout {
		return false
	}
	alive, _ := t.Vouch(id, addr)
	return alive
}

var (
	_ raft.WithQuiescence = (*transport)(nil)
	_ raft.WithLeaseVouch = (*transport)(nil)
)
