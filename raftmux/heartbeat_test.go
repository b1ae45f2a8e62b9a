package raftmux

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// hbReq is a heartbeat as raft's leader sends it, from the Mux at addr.
func hbReq(addr net.Addr, term uint64) *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("leader"), Addr: []byte(addr.String())},
		Term:      term,
		Leader:    []byte(addr.String()),
	}
}

// answerFor is the response the echo handler of group gives to req.
func answerFor(group string, req *raft.AppendEntriesRequest) raft.AppendEntriesResponse {
	return raft.AppendEntriesResponse{
		RPCHeader:      raft.RPCHeader{ProtocolVersion: req.ProtocolVersion, ID: []byte("follower-" + group), Addr: req.Addr},
		Term:           req.Term + 1,
		LastLog:        uint64(len(group))*1000 + req.Term,
		Success:        req.Term%2 == 0,
		NoRetryBackoff: req.Term%3 == 0,
	}
}

// echoHeartbeats makes tr answer heartbeats with answerFor, after checking
// the request is intact, and counts the calls.
func echoHeartbeats(t *testing.T, tr *GroupTransport, from net.Addr) *atomic.Int64 {
	var calls atomic.Int64
	tr.SetHeartbeatHandler(func(rpc raft.RPC) {
		calls.Add(1)
		req := rpc.Command.(*raft.AppendEntriesRequest)
		if string(req.ID) != "leader" || string(req.Addr) != from.String() || string(req.Leader) != from.String() ||
			req.ProtocolVersion != raft.ProtocolVersionMax || !isHeartbeat(req) {
			t.Errorf("group %s: handler got %+v", tr.Group(), req)
		}
		resp := answerFor(tr.Group(), req)
		rpc.Respond(&resp, nil)
	})
	return &calls
}

// blockingHandler makes tr's heartbeat handler wait for release; entered
// receives once per call when it starts.
func blockingHandler(tr *GroupTransport) (entered chan struct{}, release func()) {
	entered = make(chan struct{}, 16)
	gate := make(chan struct{})
	tr.SetHeartbeatHandler(func(rpc raft.RPC) {
		entered <- struct{}{}
		<-gate
		rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
	})
	var once sync.Once
	return entered, func() { once.Do(func() { close(gate) }) }
}

func sendHB(tr *GroupTransport, to net.Addr, term uint64) (raft.AppendEntriesResponse, error) {
	var resp raft.AppendEntriesResponse
	err := tr.AppendEntries("follower", raft.ServerAddress(to.String()), hbReq(tr.m.Addr(), term), &resp)
	return resp, err
}

// Fifty groups' heartbeats between two Muxes travel in far fewer frames
// than heartbeats, over one connection, and each group gets its own
// answer, every field intact.
func TestHeartbeatsOfManyGroupsShareFrames(t *testing.T) {
	const groups, rounds = 50, 10
	a := newMux(t, Config{HeartbeatWindow: 20 * time.Millisecond})
	b := newMux(t, Config{})
	var from, to []*GroupTransport
	for g := range groups {
		name := fmt.Sprintf("g%d", g)
		from = append(from, newTransport(t, a, name))
		tr := newTransport(t, b, name)
		echoHeartbeats(t, tr, a.Addr())
		to = append(to, tr)
	}
	for r := range rounds {
		var wg sync.WaitGroup
		for g := range groups {
			wg.Go(func() {
				term := uint64(r*groups + g + 1)
				resp, err := sendHB(from[g], b.Addr(), term)
				req := hbReq(a.Addr(), term)
				if want := answerFor(from[g].Group(), req); err != nil || !equalResp(resp, want) {
					t.Errorf("group %d round %d: got %+v, %v; want %+v", g, r, resp, err, want)
				}
			})
		}
		wg.Wait()
	}
	sa, sb := a.Stats(), b.Stats()
	const n = groups * rounds
	if sa.HeartbeatsSent != n || sb.HeartbeatsReceived != n {
		t.Fatalf("sent %d and received %d heartbeats, want %d", sa.HeartbeatsSent, sb.HeartbeatsReceived, n)
	}
	// Every round's heartbeats start together; a 20 ms window gathers most
	// of them in one frame. One frame per 5 heartbeats is a loose bound.
	if sb.HeartbeatFramesReceived > n/5 || sa.HeartbeatFramesSent != sb.HeartbeatFramesReceived {
		t.Errorf("%d heartbeats in %d frames sent, %d received; want at most %d", n, sa.HeartbeatFramesSent, sb.HeartbeatFramesReceived, n/5)
	}
	if sa.HeartbeatDials != 1 {
		t.Errorf("%d heartbeat connections dialed, want 1", sa.HeartbeatDials)
	}
	t.Logf("%d heartbeats in %d frames", n, sb.HeartbeatFramesReceived)
}

func equalResp(a, b raft.AppendEntriesResponse) bool {
	return a.ProtocolVersion == b.ProtocolVersion && string(a.ID) == string(b.ID) && string(a.Addr) == string(b.Addr) &&
		a.Term == b.Term && a.LastLog == b.LastLog && a.Success == b.Success && a.NoRetryBackoff == b.NoRetryBackoff
}

// Only heartbeats are coalesced: any other AppendEntries goes to the
// group's consumer over its own connection.
func TestOnlyHeartbeatsAreCoalesced(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{})
	from, to := newTransport(t, a, "g"), newTransport(t, b, "g")
	calls := echoHeartbeats(t, to, a.Addr())
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		rpc := <-to.Consumer()
		req, ok := rpc.Command.(*raft.AppendEntriesRequest)
		if !ok || req.PrevLogEntry != 4 {
			t.Errorf("consumer got %+v", rpc.Command)
		}
		rpc.Respond(&raft.AppendEntriesResponse{Term: 9, LastLog: 4}, nil)
	})
	req := hbReq(a.Addr(), 3)
	req.PrevLogEntry, req.PrevLogTerm = 4, 3
	var resp raft.AppendEntriesResponse
	if err := from.AppendEntries("f", raft.ServerAddress(b.Addr().String()), req, &resp); err != nil || resp.Term != 9 {
		t.Fatalf("AppendEntries: %+v, %v", resp, err)
	}
	if st := a.Stats(); st.HeartbeatsSent != 0 || calls.Load() != 0 {
		t.Errorf("an AppendEntries with a log position went as a heartbeat (%d sent, %d handled)", st.HeartbeatsSent, calls.Load())
	}
}

// A heartbeat for a group the peer has not opened, or whose raft has not
// set a handler yet, fails with ErrUnknownGroup; once it is there, it works.
func TestHeartbeatToUnknownGroup(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{})
	from := newTransport(t, a, "g")
	if _, err := sendHB(from, b.Addr(), 1); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("heartbeat to a group the peer lacks: err = %v, want ErrUnknownGroup", err)
	}
	to := newTransport(t, b, "g")
	if _, err := sendHB(from, b.Addr(), 1); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("heartbeat to a group without a handler: err = %v, want ErrUnknownGroup", err)
	}
	echoHeartbeats(t, to, a.Addr())
	if resp, err := sendHB(from, b.Addr(), 4); err != nil || !equalResp(resp, answerFor("g", hbReq(a.Addr(), 4))) {
		t.Fatalf("heartbeat once the group is open: %+v, %v", resp, err)
	}
	if err := to.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sendHB(from, b.Addr(), 5); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("heartbeat to a closed group: err = %v, want ErrUnknownGroup", err)
	}
}

// A group whose handler hangs does not hold up other groups' heartbeats in
// the same frame: its own heartbeat is abandoned and answered
// ErrNoHeartbeatResponse, and while the handler still hangs its next
// heartbeats are refused without calling it again.
func TestSlowGroupDoesNotHoldUpOthers(t *testing.T) {
	a := newMux(t, Config{HeartbeatWindow: 50 * time.Millisecond})
	b := newMux(t, Config{HeartbeatHandlerTimeout: 50 * time.Millisecond})
	slowA, fastA := newTransport(t, a, "slow"), newTransport(t, a, "fast")
	slowB, fastB := newTransport(t, b, "slow"), newTransport(t, b, "fast")
	entered, release := blockingHandler(slowB)
	defer release()
	echoHeartbeats(t, fastB, a.Addr())

	for round := range 3 {
		slowErr, fastErr := make(chan error, 1), make(chan error, 1)
		go func() { _, err := sendHB(slowA, b.Addr(), 1); slowErr <- err }()
		go func() { _, err := sendHB(fastA, b.Addr(), 2); fastErr <- err }()
		if err := <-fastErr; err != nil {
			t.Fatalf("round %d: fast group sent with a hanging one: %v", round, err)
		}
		if err := <-slowErr; !errors.Is(err, ErrNoHeartbeatResponse) {
			t.Fatalf("round %d: hanging group: err = %v, want ErrNoHeartbeatResponse", round, err)
		}
		// The handler of slow still hangs: it has not been released.
		if resp, err := sendHB(fastA, b.Addr(), 4); err != nil || !equalResp(resp, answerFor("fast", hbReq(a.Addr(), 4))) {
			t.Fatalf("round %d: fast group while slow hangs: %+v, %v", round, resp, err)
		}
		if _, err := sendHB(slowA, b.Addr(), 1); !errors.Is(err, ErrNoHeartbeatResponse) {
			t.Fatalf("round %d: slow group while it hangs: err = %v, want ErrNoHeartbeatResponse", round, err)
		}
	}
	<-entered
	select {
	case <-entered:
		t.Fatal("the hanging handler was called again while busy")
	default:
	}
	release()
	waitFor(t, "the slow group to answer again", func() bool {
		_, err := sendHB(slowA, b.Addr(), 1)
		return err == nil
	})
	if d := a.Stats().HeartbeatDials; d != 1 {
		t.Errorf("%d heartbeat connections dialed, want 1 (abandoning a handler must not cost the connection)", d)
	}
}

// A heartbeat waiting for its answer returns raft.ErrTransportShutdown as
// soon as its group's transport closes; later ones fail at once.
func TestClosingGroupFailsItsWaitingHeartbeat(t *testing.T) {
	a := newMux(t, Config{})
	b := newMux(t, Config{HeartbeatHandlerTimeout: time.Hour})
	from := newTransport(t, a, "g")
	entered, release := blockingHandler(newTransport(t, b, "g"))
	defer release()
	errs := make(chan error, 1)
	go func() { _, err := sendHB(from, b.Addr(), 1); errs <- err }()
	<-entered
	if err := from.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; !errors.Is(err, raft.ErrTransportShutdown) {
		t.Fatalf("waiting heartbeat of a closed group: err = %v, want ErrTransportShutdown", err)
	}
	if _, err := sendHB(from, b.Addr(), 1); !errors.Is(err, raft.ErrTransportShutdown) {
		t.Fatalf("heartbeat after close: err = %v, want ErrTransportShutdown", err)
	}
}

// Losing the connection fails the frame in flight; the next frame dials a
// new connection.
func TestConnectionLossFailsFrameAndRedials(t *testing.T) {
	a := newMux(t, Config{})
	b := newMux(t, Config{HeartbeatHandlerTimeout: time.Hour})
	from, to := newTransport(t, a, "g"), newTransport(t, b, "g")
	entered, release := blockingHandler(to)
	defer release()
	errs := make(chan error, 1)
	go func() { _, err := sendHB(from, b.Addr(), 1); errs <- err }()
	<-entered
	closeTracked(&a.hbDialed)
	if err := <-errs; err == nil || errors.Is(err, raft.ErrTransportShutdown) {
		t.Fatalf("heartbeat on a lost connection: err = %v, want a connection error", err)
	}
	release()
	echoHeartbeats(t, to, a.Addr())
	waitFor(t, "a heartbeat on a new connection", func() bool {
		_, err := sendHB(from, b.Addr(), 2)
		return err == nil
	})
	if d := a.Stats().HeartbeatDials; d != 2 {
		t.Errorf("%d heartbeat connections dialed, want 2", d)
	}
}

// closeTracked closes every conn in s, leaving s open for new ones.
func closeTracked(s *connSet) {
	s.mu.Lock()
	var conns []*trackedConn
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// A heartbeat gets no longer than its group's Timeout.
func TestHeartbeatTimesOut(t *testing.T) {
	a := newMux(t, Config{})
	b := newMux(t, Config{HeartbeatHandlerTimeout: time.Hour})
	from, err := a.Transport("g", TransportConfig{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = from.Close() })
	_, release := blockingHandler(newTransport(t, b, "g"))
	defer release()
	if _, err := sendHB(from, b.Addr(), 1); !errors.Is(err, ErrHeartbeatTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want ErrHeartbeatTimeout", err)
	}
}

// A peer that does not serve coalesced heartbeats gets them over each
// group's own connection, handled by the same handler.
func TestHeartbeatFallsBackForPeerWithoutCoalescing(t *testing.T) {
	a := newMux(t, Config{})
	b := newMux(t, Config{DisableHeartbeatCoalescing: true})
	from := newTransport(t, a, "g")
	calls := echoHeartbeats(t, newTransport(t, b, "g"), a.Addr())
	for term := uint64(1); term <= 3; term++ {
		if resp, err := sendHB(from, b.Addr(), term); err != nil || !equalResp(resp, answerFor("g", hbReq(a.Addr(), term))) {
			t.Fatalf("heartbeat %d: %+v, %v", term, resp, err)
		}
	}
	st := a.Stats()
	if st.HeartbeatsFallback != 3 || st.HeartbeatFramesSent != 0 || calls.Load() != 3 {
		t.Errorf("fallback %d, frames %d, handled %d; want 3, 0, 3", st.HeartbeatsFallback, st.HeartbeatFramesSent, calls.Load())
	}
	// And the other way round: a Mux without coalescing sends per group.
	back := newTransport(t, b, "h")
	echoHeartbeats(t, newTransport(t, a, "h"), b.Addr())
	if _, err := sendHB(back, a.Addr(), 2); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.HeartbeatFramesReceived != 0 {
		t.Errorf("a Mux without coalescing sent %d frames", st.HeartbeatFramesReceived)
	}
}

// Closing the Mux fails the heartbeat in flight and every later one.
func TestMuxCloseFailsHeartbeats(t *testing.T) {
	a, err := Listen(Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	b := newMux(t, Config{HeartbeatHandlerTimeout: time.Hour})
	from, err := a.Transport("g", TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := blockingHandler(newTransport(t, b, "g"))
	defer release()
	errs := make(chan error, 1)
	go func() { _, err := sendHB(from, b.Addr(), 1); errs <- err }()
	<-entered
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err == nil {
		t.Fatal("heartbeat in flight survived Mux.Close")
	}
	if _, err := sendHB(from, b.Addr(), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("heartbeat after Mux.Close: err = %v, want ErrClosed", err)
	}
	if err := from.Close(); err != nil {
		t.Fatal(err)
	}
}
