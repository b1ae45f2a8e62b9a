package multiraft

import (
	"io"
	"net"
	"testing"
	"time"

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
	n.startWatched()
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

// A hand-over is over once this node knows its successor leads, not when
// raft counts the transfer done: raft does once this leader steps down,
// and an answer from the candidate, already in its newer term, makes it
// step down before the candidate's vote request arrives. The node then
// closed its groups, the vote request found none, and the candidate, with
// the third member down, could not be elected: the cause of
// TestShutdownHandsLeadershipsToLiveNodes's rare failure in broker. Here
// node 3's vote requests to node 1 wait until node 1 has stepped down.
func TestHandOverWaitsForTheNewLeader(t *testing.T) {
	n := newTestNet(t, func(tu *Tuning) {
		tu.RebalanceInterval = -1
		tu.DisableQuiescence = true // node 1 replicates each CommitTimeout
		tu.CallTimeout = 10 * time.Second
	})
	n.startWatched()
	gs := ledByNode1(t, n, []string{"gw"}, [][]int32{{1, 2, 3}}, slowTiming())[0]
	n.stop(2)
	addr1, _ := n.resolve(1)
	votes, err := n.host(3).peer(addr1)
	if err != nil {
		t.Fatal(err)
	}
	for range cap(votes.elections) { // node 3's election calls to node 1 wait
		votes.elections <- struct{}{}
	}
	type known struct {
		leader int32
		ok     bool
		term   uint64
	}
	handedOver := make(chan known, 1)
	ctx := testCtx(t)
	go func() {
		n.host(1).HandOver(ctx)
		l, _, ok := gs[0].Leader()
		handedOver <- known{l, ok, gs[0].Epoch()}
	}()
	waitFor(t, "node 1 to step down", func() bool { return !gs[0].IsLeader() })
	for range cap(votes.elections) {
		votes.releaseCall(callRequestVote)
	}
	if k := <-handedOver; !k.ok || k.leader != 3 {
		t.Fatalf("HandOver returned while node 1 knew leader %d (known %v) in term %d, node 3 in term %d: "+
			"node 1 would stop before giving node 3 its vote", k.leader, k.ok, k.term, gs[2].Epoch())
	}
	_ = gs[0].Close() // node 1 stops, as broker's Node does after HandOver
	waitFor(t, "node 3 to lead", gs[2].IsLeader)
}
