package broker

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/raftmux"
)

type fakeView struct {
	term  uint64
	state raft.RaftState
}

func (v fakeView) CurrentTerm() uint64   { return v.term }
func (v fakeView) State() raft.RaftState { return v.state }

func heartbeat(term uint64) (raft.RPC, chan raft.RPCResponse) {
	ch := make(chan raft.RPCResponse, 1)
	return raft.RPC{Command: &raft.AppendEntriesRequest{Term: term}, RespChan: ch}, ch
}

// A heartbeat raft answers without a write runs inline; one that would
// persist a newer term first (or reach a candidate) runs in the
// background, so the caller (the Mux's heartbeat frame) is not held up;
// while it runs, another such heartbeat is refused at once; the guard's
// Close waits for the background one.
func TestHeartbeatGuardMovesTermWritesOffTheFrame(t *testing.T) {
	g := &heartbeatGuard{}
	release := make(chan struct{})
	calls := make(chan uint64, 10)
	cb := g.wrap(func(rpc raft.RPC) {
		req := rpc.Command.(*raft.AppendEntriesRequest)
		calls <- req.Term
		if req.Term > 1 {
			<-release // a term write waiting for the disk
		}
		rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil)
	})

	// No raft yet: inline, whatever the term.
	rpc, resp := heartbeat(1)
	cb(rpc)
	if r := <-resp; r.Error != nil {
		t.Fatal(r.Error)
	}
	<-calls

	g.watch(fakeView{term: 1, state: raft.Follower})
	rpc, resp = heartbeat(1) // same term, follower: inline
	cb(rpc)
	select {
	case r := <-resp:
		if r.Error != nil {
			t.Fatal(r.Error)
		}
	default:
		t.Fatal("a heartbeat without a write was not answered inline")
	}
	<-calls

	rpc, slowResp := heartbeat(2) // newer term: would write
	done := make(chan struct{})
	go func() { cb(rpc); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a heartbeat that persists a term held up its caller")
	}
	if got := <-calls; got != 2 {
		t.Fatalf("handler called with term %d", got)
	}

	rpc, resp = heartbeat(3) // another, while the first still writes
	cb(rpc)
	if r := <-resp; !errors.Is(r.Error, errHeartbeatBusy) {
		t.Fatalf("second writing heartbeat answered %v, want errHeartbeatBusy", r.Error)
	}

	g.watch(fakeView{term: 3, state: raft.Candidate}) // a candidate writes too
	if !g.writes(raft.RPC{Command: &raft.AppendEntriesRequest{Term: 3}}) {
		t.Fatal("a heartbeat to a candidate is not treated as writing")
	}

	close(release)
	g.wg.Wait()
	if r := <-slowResp; r.Error != nil {
		t.Fatal(r.Error)
	}
	if g.busy.Load() {
		t.Fatal("still busy after the background heartbeat")
	}
}

// Heartbeats that would persist a term keep arriving while the guard
// closes (raft shutting down while a peer's frame is being handled):
// each runs before Close's wait or is refused, and Close never waits
// while another background heartbeat starts (the race detector checks
// the WaitGroup).
func TestHeartbeatGuardCloseRacesHeartbeats(t *testing.T) {
	m, err := raftmux.Listen(raftmux.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := range 50 {
		tr, err := m.Transport(fmt.Sprintf("g%d", i), raftmux.TransportConfig{})
		if err != nil {
			t.Fatal(err)
		}
		g := newHeartbeatGuard(tr)
		g.watch(fakeView{term: 1, state: raft.Follower})
		cb := g.wrap(func(rpc raft.RPC) { rpc.Respond(&raft.AppendEntriesResponse{Term: 2, Success: true}, nil) })
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 200 {
				rpc, resp := heartbeat(2)
				cb(rpc)
				if r := <-resp; r.Error != nil && !errors.Is(r.Error, errHeartbeatBusy) && !errors.Is(r.Error, raft.ErrTransportShutdown) {
					t.Errorf("heartbeat answered %v", r.Error)
				}
			}
		})
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}
