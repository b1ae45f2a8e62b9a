package multiraft

import (
	"io"
	"net"
	"testing"

	"github.com/hashicorp/yamux"
)

// A node that stops gracefully while another member's node is down hands
// its leadership to a member that is up, even while the down node still
// looks up (PeerUp): a session whose end is not read yet, or a hung node's
// before its keepalive fails. The transfer to it fails, and the next
// member in the group's order takes over. Without that, node 1 kept the
// leadership and would stop with it, and node 3 alone cannot be elected:
// the likely cause of a rare failure of broker's
// TestShutdownHandsLeadershipsToLiveNodes under load.
func TestHandOverPassesOverADownNodeThatLooksUp(t *testing.T) {
	n := newTestNet(t, func(tu *Tuning) { tu.RebalanceInterval = -1 })
	for id := int32(1); id <= 3; id++ {
		n.start(id)
	}
	n.watchAll()
	gs := ledByNode1(t, n, []string{"gh"}, [][]int32{{1, 2, 3}}, slowTiming())[0]
	h := n.host(1)
	addr, _ := n.resolve(2)
	n.stop(2)
	waitFor(t, "node 1 to see node 2 down", func() bool { return !h.PeerUp(addr) })
	stallSession(t, h, addr)
	if _, up := h.nodeUp(2); !up {
		t.Fatal("node 2, down, does not look up to node 1")
	}

	h.HandOver(testCtx(t))
	if gs[0].IsLeader() {
		t.Fatal("node 1 still leads after HandOver: the leadership was offered to node 2, which is down, and to no one else")
	}
	waitFor(t, "node 3 to lead", gs[2].IsLeader)
}

// stallSession makes h's session to the peer at addr one that stays open
// and never answers: what h holds for a peer that died until it reads the
// session's end, or for a hung peer until its keepalive fails. What h
// writes there is read and dropped.
func stallSession(t *testing.T, h *Host, addr string) {
	t.Helper()
	ours, theirs := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, theirs) }() // ends when either end closes
	sess, err := yamux.Client(ours, h.yamux)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(); _ = theirs.Close() })
	p, err := h.peer(addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	stale := p.idle
	p.sess, p.idle = sess, nil
	p.mu.Unlock()
	for _, st := range stale {
		_ = st.Close()
	}
}
