package multiraft

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// bareTransport registers a transport for group on h with no raft behind
// it, for tests that drive the heartbeat path by hand.
func bareTransport(t testing.TB, h *Host, group string) *transport {
	t.Helper()
	tr, err := h.newTransport(&Group{spec: GroupSpec{Name: group}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func heartbeatReq(term uint64) *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("1"), Addr: []byte("a")}, Term: term, Leader: []byte("a")}
}

// answer is a heartbeat handler that answers success at once.
func answer(rpc raft.RPC) {
	req := rpc.Command.(*raft.AppendEntriesRequest)
	rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil)
}

// Heartbeats of many groups to one peer share frames.
func TestHeartbeatsOfManyGroupsShareFrames(t *testing.T) {
	n := newTestNet(t, func(tu *Tuning) { tu.HeartbeatWindow = 50 * time.Millisecond })
	a, b := n.start(1), n.start(2)
	const groups = 40
	var wg sync.WaitGroup
	errs := make(chan error, groups)
	for i := range groups {
		name := fmt.Sprintf("g%d", i)
		bareTransport(t, b, name).SetHeartbeatHandler(answer)
		from := bareTransport(t, a, name)
		wg.Go(func() {
			var resp raft.AppendEntriesResponse
			if err := from.AppendEntries("2", raft.ServerAddress(b.Addr()), heartbeatReq(3), &resp); err != nil || !resp.Success || resp.Term != 3 {
				errs <- fmt.Errorf("%s: %v, %+v", name, err, resp)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := a.Stats()
	if st.HeartbeatsSent != groups || st.HeartbeatFramesSent > 3 {
		t.Fatalf("%d heartbeats in %d frames; want %d in a few", st.HeartbeatsSent, st.HeartbeatFramesSent, groups)
	}
	if b.Stats().HeartbeatsReceived != groups {
		t.Fatalf("peer received %d heartbeats", b.Stats().HeartbeatsReceived)
	}
}

// A heartbeat handler that hangs holds up its own heartbeat only: the
// others in its frame are answered, the hung one gets ErrNoResponse, and
// so does the group's next heartbeat while the handler still runs.
func TestHungHeartbeatHandlerDoesNotHoldUpOthers(t *testing.T) {
	n := newTestNet(t, func(tu *Tuning) { tu.HeartbeatHandlerTimeout = 20 * time.Millisecond })
	a, b := n.start(1), n.start(2)
	release := make(chan struct{})
	defer close(release)
	bareTransport(t, b, "stuck").SetHeartbeatHandler(func(rpc raft.RPC) { <-release; answer(rpc) })
	bareTransport(t, b, "fine").SetHeartbeatHandler(answer)
	stuck, fine := bareTransport(t, a, "stuck"), bareTransport(t, a, "fine")
	addr := raft.ServerAddress(b.Addr())

	stuckErr := make(chan error, 1)
	go func() {
		var resp raft.AppendEntriesResponse
		stuckErr <- stuck.AppendEntries("2", addr, heartbeatReq(1), &resp)
	}()
	time.Sleep(5 * time.Millisecond) // the stuck one first in the frame
	var resp raft.AppendEntriesResponse
	if err := fine.AppendEntries("2", addr, heartbeatReq(1), &resp); err != nil || !resp.Success {
		t.Fatalf("heartbeat behind a hung one: %v, %+v", err, resp)
	}
	if err := <-stuckErr; !errors.Is(err, ErrNoResponse) {
		t.Fatalf("hung heartbeat: %v, want ErrNoResponse", err)
	}
	if err := stuck.AppendEntries("2", addr, heartbeatReq(1), &resp); !errors.Is(err, ErrNoResponse) {
		t.Fatalf("next heartbeat while the handler hangs: %v, want ErrNoResponse (busy)", err)
	}
}

// fakeView stands in for a group's raft in the heartbeat guard.
type fakeView struct {
	term  uint64
	state raft.RaftState
}

func (v fakeView) CurrentTerm() uint64   { return v.term }
func (v fakeView) State() raft.RaftState { return v.state }
func setView(t *transport, v raftView)   { t.view.Store(&v) }
func entry(group string, term uint64) *hbEntry {
	return &hbEntry{group: group, req: *heartbeatReq(term)}
}

// The heartbeat guard: a heartbeat that makes raft persist a term runs in
// the background and is answered at once, one at a time per group; the
// others are handled inline.
func TestHeartbeatGuard(t *testing.T) {
	n := newTestNet(t, nil)
	h := n.start(1)
	tr := bareTransport(t, h, "g")
	release := make(chan struct{})
	var calls sync.WaitGroup
	tr.SetHeartbeatHandler(func(rpc raft.RPC) {
		defer calls.Done()
		if rpc.Command.(*raft.AppendEntriesRequest).Term > 1 {
			<-release // persisting the term
		}
		answer(rpc)
	})
	setView(tr, fakeView{term: 1, state: raft.Follower})

	calls.Add(1)
	if r := h.handleHeartbeat(entry("g", 1)); r.status != statusOK {
		t.Fatalf("same-term heartbeat: status %d, want inline OK", r.status)
	}
	calls.Add(1)
	if r := h.handleHeartbeat(entry("g", 2)); r.status != statusNoResponse {
		t.Fatalf("newer-term heartbeat: status %d, want no response (handled in the background)", r.status)
	}
	if r := h.handleHeartbeat(entry("g", 2)); r.status != statusBusy {
		t.Fatalf("heartbeat while the last still persists: status %d, want busy", r.status)
	}
	close(release)
	calls.Wait()
	waitFor(t, "the background heartbeat to end", func() bool { return !tr.busy.Load() })

	setView(tr, fakeView{term: 3, state: raft.Candidate}) // a candidate writes too
	if !tr.writesTerm(heartbeatReq(3)) {
		t.Fatal("a candidate's heartbeat is not guarded")
	}
	if r := h.handleHeartbeat(entry("nope", 1)); r.status != statusUnknownGroup {
		t.Fatalf("unknown group: status %d", r.status)
	}
}

// A heartbeat of an older term than a candidate's (or any member's) is
// refused without persisting anything, so it is answered inline: the
// leader must see the higher term and step down. Answered in the
// background, the refusal was dropped, and a candidate whose pre-votes the
// others refuse (they hear from the leader) stayed one for ever.
func TestHeartbeatOfAnOlderTermIsAnswered(t *testing.T) {
	n := newTestNet(t, nil)
	h := n.start(1)
	tr := bareTransport(t, h, "g")
	tr.SetHeartbeatHandler(func(rpc raft.RPC) {
		rpc.Respond(&raft.AppendEntriesResponse{Term: 5}, nil) // raft: a.Term < currentTerm
	})
	for _, st := range []raft.RaftState{raft.Candidate, raft.Follower, raft.Leader} {
		setView(tr, fakeView{term: 5, state: st})
		r := h.handleHeartbeat(entry("g", 4))
		if r.status != statusOK || r.resp.Term != 5 {
			t.Fatalf("%v at term 5, heartbeat of term 4: status %d, term %d; want the refusal with term 5 inline", st, r.status, r.resp.Term)
		}
	}
	if r := h.handleHeartbeat(entry("nope", 1)); r.status != statusUnknownGroup {
		t.Fatalf("unknown group: status %d", r.status)
	}
}

// Close waits for a background heartbeat and refuses new ones; run under
// -race, it orders every background start before the wait.
func TestHeartbeatGuardCloseRacesHeartbeats(t *testing.T) {
	n := newTestNet(t, nil)
	h := n.start(1)
	for i := range 20 {
		tr, err := h.newTransport(&Group{spec: GroupSpec{Name: fmt.Sprintf("g%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		tr.SetHeartbeatHandler(answer)
		setView(tr, fakeView{term: 1, state: raft.Follower})
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 50 {
				h.handleHeartbeat(entry(tr.group, 2))
			}
		})
		tr.Close()
		wg.Wait()
		if tr.inBackground(func() {}) {
			t.Fatal("a closed transport started a background heartbeat")
		}
	}
}

// A heartbeat to a peer the watch finds down waits for it instead of
// failing at once (raft would retry it two to four times a second, for
// each group it leads), and goes through once the peer is back.
func TestHeartbeatToADownPeerWaitsForIt(t *testing.T) {
	net := newTestNet(t, nil)
	h := net.start(1)
	net.start(2)
	net.watchAll()
	g, _ := net.open(1, "g", []int32{1, 2}, fastTiming(), false)
	net.open(2, "g", []int32{1, 2}, fastTiming(), false)
	addr, _ := net.resolve(2)
	waitFor(t, "the session to node 2", func() bool { return h.PeerUp(addr) })
	net.stop(2)
	waitFor(t, "node 2 found down", func() bool { return !h.PeerUp(addr) })
	done := make(chan error, 1)
	go func() {
		var resp raft.AppendEntriesResponse
		done <- g.trans.heartbeat(addr, &raft.AppendEntriesRequest{Term: 1}, &resp)
	}()
	select {
	case err := <-done:
		t.Fatalf("a heartbeat to a down peer returned at once: %v", err)
	case <-time.After(downPeerWait / 4):
	}
	if err := <-done; !errors.Is(err, ErrPeerDown) {
		t.Fatalf("a heartbeat to a peer down for good: %v, want ErrPeerDown", err)
	}
	net.start(2) // without the group: the answer is an error, but not ErrPeerDown
	// The watch redials within WatchRetryMax; a heartbeat waiting then
	// goes through.
	waitFor(t, "a heartbeat to the peer back up to go through", func() bool {
		var resp raft.AppendEntriesResponse
		return !errors.Is(g.trans.heartbeat(addr, &raft.AppendEntriesRequest{Term: 1}, &resp), ErrPeerDown)
	})
}

// Closing a group ends its heartbeats' wait for a down peer at once: raft's
// Shutdown, which Close calls before it closes the transport, waits for
// its heartbeat goroutines.
func TestGroupCloseEndsAHeartbeatsWaitForADownPeer(t *testing.T) {
	net := newTestNet(t, nil)
	h := net.start(1)
	net.start(2)
	net.watchAll()
	addr, _ := net.resolve(2)
	waitFor(t, "the session to node 2", func() bool { return h.PeerUp(addr) })
	net.stop(2)
	waitFor(t, "node 2 found down", func() bool { return !h.PeerUp(addr) })
	g := &Group{spec: GroupSpec{Name: "g"}, stop: make(chan struct{})}
	tr, err := h.newTransport(g)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	done := make(chan error, 1)
	go func() {
		var resp raft.AppendEntriesResponse
		done <- tr.heartbeat(addr, &raft.AppendEntriesRequest{Term: 1}, &resp)
	}()
	time.Sleep(downPeerWait / 4) // let it wait
	close(g.stop)                // what Close does first
	if err := <-done; !errors.Is(err, raft.ErrTransportShutdown) {
		t.Fatalf("a heartbeat waiting for a down peer when its group closed: %v, want raft.ErrTransportShutdown", err)
	}
}
