package raftmux

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Ten groups on three nodes elect, and fail over when a node dies, with
// their votes (pre-votes, votes) on RPCChannel: one dialed connection per
// pair of peers, whatever the number of groups.
func TestElectionsUseOneRPCConnectionPerPeer(t *testing.T) {
	const groups = 10
	var muxes []*Mux
	for range 3 {
		muxes = append(muxes, newMux(t, Config{}))
	}
	all := make([][]*replica, groups)
	for g := range groups {
		all[g] = startGroup(t, muxes, fmt.Sprintf("g%d", g))
	}
	for g := range groups {
		apply(t, fmt.Sprintf("g%d", g), all[g], -1, 1, 1)
	}
	var received uint64
	for i, m := range muxes {
		st := m.Stats()
		received += st.RPCsReceived
		if st.RPCDials > 2 || st.RPCsFallback != 0 {
			t.Errorf("mux %d: %d RPC connections dialed (want at most one per peer), %d RPCs fell back", i, st.RPCDials, st.RPCsFallback)
		}
	}
	if received < groups {
		t.Fatalf("%d election RPCs received on RPCChannel for %d elected groups", received, groups)
	}

	// Node 0 dies; every group it led elects again over RPCChannel.
	led := 0
	for g := range groups {
		if all[g][0].r.State() == raft.Leader {
			led++
		}
	}
	before := muxes[1].Stats().RPCsReceived + muxes[2].Stats().RPCsReceived
	// As a crash looks to the others: the port and every connection of
	// node 0 go away (closing the mux alone leaves the groups' dialed
	// replication connections open).
	for g := range groups {
		if err := all[g][0].r.Shutdown().Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := muxes[0].Close(); err != nil {
		t.Fatal(err)
	}
	for g := range groups {
		apply(t, fmt.Sprintf("g%d", g), all[g], 0, 2, 2)
	}
	after := muxes[1].Stats().RPCsReceived + muxes[2].Stats().RPCsReceived
	if after-before < uint64(led) {
		t.Fatalf("%d groups lost their leader, but only %d election RPCs went over RPCChannel", led, after-before)
	}
	for i, m := range muxes[1:] {
		if st := m.Stats(); st.RPCDials > 2 {
			t.Errorf("mux %d dialed %d RPC connections", i+1, st.RPCDials)
		}
	}
}

// A group whose raft does not take an RPC in time is answered
// ErrNoRPCResponse, well before the caller's own timeout, and other groups
// are answered meanwhile.
func TestRPCToStuckGroup(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{})
	from := newTransport(t, a, "stuck")
	newTransport(t, b, "stuck") // nobody reads its Consumer
	fromOK := newTransport(t, a, "ok")
	answerVotes(t, newTransport(t, b, "ok"), 7)

	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := vote(from, b.Addr())
		errc <- err
	}()
	if term, err := vote(fromOK, b.Addr()); err != nil || term != 7 {
		t.Fatalf("vote to the other group while one is stuck: term %d, err %v", term, err)
	}
	err := <-errc
	if !errors.Is(err, ErrNoRPCResponse) {
		t.Fatalf("vote to a stuck group: err = %v, want ErrNoRPCResponse", err)
	}
	if d := time.Since(start); d >= time.Second {
		t.Fatalf("the stuck group's answer took %v, not before the caller's 1s timeout", d)
	}
}

// Garbage on RPCChannel closes that connection only: the Mux goes on
// answering RPCs.
func TestRPCChannelRejectsGarbage(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{})
	answerVotes(t, newTransport(t, b, "g"), 3)
	for _, junk := range [][]byte{
		{0, 0, 0, 0},             // empty frame
		{0xff, 0xff, 0xff, 0xff}, // 4 GiB frame
		{0, 0, 0, 11, 0, 0, 0, 0, 0, 0, 0, 1, 9, 0, 1},           // unknown kind
		{0, 0, 0, 13, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 9, 'g', 'x'}, // name longer than the frame
	} {
		c, err := a.Dial(testCtx(t), b.Addr().String(), RPCChannel)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(junk); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 64)); err == nil || errors.Is(err, errTimeout(err)) {
			t.Fatalf("frame %x: read %d bytes, err %v; want the connection closed", junk, n, err)
		}
		c.Close()
	}
	if term, err := vote(newTransport(t, a, "g"), b.Addr()); err != nil || term != 3 {
		t.Fatalf("vote after garbage: term %d, err %v", term, err)
	}
}

// errTimeout returns err if it is a timeout, so that errors.Is matches it,
// and a sentinel that nothing matches otherwise.
func errTimeout(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return errNever
}

var errNever = errors.New("never")

// A peer that accepts TCP connections but never answers (a paused
// process): every caller fails by about its own timeout while one of them
// dials, rather than after the dials of those before it.
func TestRPCToSilentPeerFailsEachCallerOnTime(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn // accepted, held open, never read; owned by the goroutine until done
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	defer func() {
		silent.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	}()
	a := newMux(t, Config{})
	const timeout, callers = 300 * time.Millisecond, 20
	tr, err := a.Transport("g", TransportConfig{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	start := time.Now()
	errc := make(chan error, callers)
	for range callers {
		go func() {
			_, err := vote(tr, silent.Addr())
			errc <- err
		}()
	}
	for range callers {
		if err := <-errc; err == nil {
			t.Fatal("a vote to a silent peer succeeded")
		}
	}
	// Dials one after another, each with a fresh timeout, would take
	// callers x timeout (6 s); each caller's own timeout, plus scheduling,
	// is far below that.
	if d := time.Since(start); d > 10*timeout {
		t.Fatalf("%d callers with a %v timeout took %v to fail", callers, timeout, d)
	}
}

// An election RPC for a group the peer has not opened yet waits for it to
// open (the first candidate of a new group may ask before its peers have
// opened the group) instead of failing the election; for a group that does
// not open in time it is refused with ErrUnknownGroup.
func TestRPCWaitsForAGroupAboutToOpen(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{})
	from := newTransport(t, a, "late")
	opened := make(chan *GroupTransport, 1)
	go func() {
		time.Sleep(rpcOpenGrace / 4)
		opened <- newTransport(t, b, "late")
	}()
	// The vote is in flight before b opens the group; it is answered once
	// the group is there.
	done := make(chan error, 1)
	var term uint64
	go func() {
		var err error
		term, err = vote(from, b.Addr())
		done <- err
	}()
	answerVotes(t, <-opened, 7)
	if err := <-done; err != nil || term != 7 {
		t.Fatalf("vote to a group opened while the vote waited: term %d, err %v", term, err)
	}

	never := newTransport(t, a, "never")
	if _, err := vote(never, b.Addr()); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("vote to a group the peer never opens: %v, want ErrUnknownGroup", err)
	}
}
