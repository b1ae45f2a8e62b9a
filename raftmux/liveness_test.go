package raftmux

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// lossRecorder collects OnPeerLost calls.
type lossRecorder struct {
	mu   sync.Mutex // guards lost
	lost []string
}

func (r *lossRecorder) onLost(addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost = append(r.lost, addr)
}

func (r *lossRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lost)
}

func (r *lossRecorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lost...)
}

// proxy forwards TCP connections from its own address to target, which
// the test can change; cut ends every forwarded connection and stop closes
// the listener too.
type proxy struct {
	ln net.Listener

	mu     sync.Mutex // guards target and conns
	target string
	conns  []net.Conn
	wg     sync.WaitGroup // accept loop and copiers
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			target := p.target
			p.mu.Unlock()
			u, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(u, c); _ = u.Close() })
			p.wg.Go(func() { _, _ = io.Copy(c, u); _ = c.Close() })
		}
	})
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) stop() {
	_ = p.ln.Close()
	p.cut()
	p.wg.Wait()
}

// A watched peer is reported lost once when its connection ends and it
// cannot be reached, and once when a new incarnation answers at its
// address; a connection that breaks while the same peer answers again is
// not reported, nor is a peer that stays down.
func TestWatchPeerReportsLostAndRestartedPeers(t *testing.T) {
	var rec lossRecorder
	a := newMux(t, Config{OnPeerLost: rec.onLost})
	b := newMux(t, Config{})
	c := newMux(t, Config{})
	p := newProxy(t, b.Addr().String())

	a.WatchPeer(p.addr())
	a.WatchPeer(p.addr()) // a second watch of the same address is a no-op
	a.WatchPeer(a.Addr().String())
	waitFor(t, "the liveness connection", func() bool { return b.Stats().Routed == 1 })

	// A broken connection to a peer that answers again: reconnected, not lost.
	p.cut()
	waitFor(t, "the reconnection", func() bool { return b.Stats().Routed == 2 })
	if n := rec.count(); n != 0 {
		t.Fatalf("a cut connection to a live peer was reported lost %d times", n)
	}

	// The same address now reaches another process (a restart): lost once.
	p.retarget(c.Addr().String())
	p.cut()
	waitFor(t, "the restart to be reported", func() bool { return rec.count() == 1 })
	waitFor(t, "the connection to the new incarnation", func() bool { return c.Stats().Routed == 1 })

	// The peer's process ends: lost once, and not again while it stays down.
	p.retarget("127.0.0.1:1") // nothing listens there: every redial is refused
	p.cut()
	waitFor(t, "the loss to be reported", func() bool { return rec.count() == 2 })
	time.Sleep(2 * liveRetryMax) // several refused redials, none of them reported
	if got := rec.get(); len(got) != 2 || got[0] != p.addr() || got[1] != p.addr() {
		t.Fatalf("reported %q, want the proxy's address twice", got)
	}
	if st := a.Stats(); st.PeersLost != 2 {
		t.Fatalf("Stats.PeersLost = %d, want 2", st.PeersLost)
	}
}

// Closing a watched Mux (the in-process stand-in for a killed node) is
// reported, and PeerUp follows the connection; UnwatchPeer stops the
// watch and Close waits for it.
func TestWatchPeerSeesMuxClose(t *testing.T) {
	var rec lossRecorder
	a := newMux(t, Config{OnPeerLost: rec.onLost})
	b, err := Listen(Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	other := newMux(t, Config{})
	a.WatchPeer(b.Addr().String())
	a.WatchPeer(other.Addr().String())
	waitFor(t, "both liveness connections", func() bool {
		return a.PeerUp(b.Addr().String()) && a.PeerUp(other.Addr().String())
	})
	if a.PeerUp("127.0.0.1:1") {
		t.Fatal("PeerUp of an address not watched is true")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the loss to be reported", func() bool { return rec.count() == 1 })
	if a.PeerUp(b.Addr().String()) {
		t.Fatal("PeerUp of the closed peer is still true")
	}
	if got := rec.get(); got[0] != b.Addr().String() {
		t.Fatalf("reported %q, want %q", got[0], b.Addr())
	}
	a.UnwatchPeer(other.Addr().String())
	waitFor(t, "the unwatched connection to close", func() bool { return other.Stats().Open == 0 })
	if a.PeerUp(other.Addr().String()) {
		t.Fatal("PeerUp of an unwatched peer is true")
	}
	if n := rec.count(); n != 1 {
		t.Fatalf("unwatching a live peer reported it lost (%d reports)", n)
	}
}

// The acceptor sends its 8-byte incarnation, the same on every connection
// and different for another Mux, and nothing else.
func TestLivenessChannelSendsIncarnation(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{})
	read := func(m *Mux) uint64 {
		t.Helper()
		c, err := a.Dial(testCtx(t), m.Addr().String(), LivenessChannel)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var buf [9]byte
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := io.ReadAtLeast(c, buf[:], 8)
		if n != 8 || err != nil {
			t.Fatalf("read %d bytes (%v), want exactly 8", n, err)
		}
		if n, err := c.Read(buf[:]); n != 0 || !isTimeout(err) {
			t.Fatalf("after the incarnation read %d bytes, %v; want nothing until the deadline", n, err)
		}
		return binary.BigEndian.Uint64(buf[:8])
	}
	b1, b2, a1 := read(b), read(b), read(a)
	if b1 == 0 || b1 != b2 || b1 == a1 {
		t.Fatalf("incarnations b %x, b again %x, a %x: want b's equal, non-zero and unlike a's", b1, b2, a1)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// StartElection makes a follower campaign at once, and the other voter
// grants its vote although it still follows the old leader: with raft
// timeouts of 30 s nothing else elects within the test's waits.
func TestStartElectionReplacesALeaderAtOnce(t *testing.T) {
	muxes := []*Mux{newMux(t, Config{}), newMux(t, Config{}), newMux(t, Config{})}
	slow := timing{hb: 30 * time.Second, election: 30 * time.Second, lease: 10 * time.Second, commit: 20 * time.Millisecond}
	reps := startGroupTimed(t, muxes, "g", slow, nil)

	if err := reps[0].trans.StartElection(testCtx(t)); err != nil {
		t.Fatalf("StartElection on a new group: %v", err)
	}
	if got := waitLeader(t, "g", reps, -1); got != 0 {
		t.Fatalf("replica %d leads, want 0", got)
	}
	apply(t, "g", reps, -1, 1, 3)
	waitApplied(t, "g", reps, 3)
	term := reps[0].r.CurrentTerm()

	// The leader's node dies.
	if err := reps[0].r.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	if err := muxes[0].Close(); err != nil {
		t.Fatal(err)
	}
	if _, id := reps[2].r.LeaderWithID(); id != "n0" {
		t.Fatalf("replica 2 follows %q; the test needs it to still follow n0", id)
	}
	if err := reps[1].trans.StartElection(testCtx(t)); err != nil {
		t.Fatalf("StartElection on a follower: %v", err)
	}
	if got := waitLeader(t, "g", reps, 0); got != 1 {
		t.Fatalf("replica %d leads, want 1", got)
	}
	if got := reps[1].r.CurrentTerm(); got != term+1 {
		t.Fatalf("new leader's term %d, want %d (one election)", got, term+1)
	}
	apply(t, "g", reps, 0, 4, 5)
	waitApplied(t, "g", reps[1:], 5)

	// A closed transport refuses.
	if err := reps[2].trans.Close(); err != nil {
		t.Fatal(err)
	}
	if err := reps[2].trans.StartElection(testCtx(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("StartElection on a closed transport: %v, want ErrClosed", err)
	}
}
