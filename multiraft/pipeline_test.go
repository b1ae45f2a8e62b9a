package multiraft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// hangBound is how long a test waits for something that must not block at
// all before it calls it a hang: generous, since the machine is shared.
const hangBound = 60 * time.Second

// patient gives calls and dials a CallTimeout that a loaded machine does
// not outrun, for tests in which no call should fail.
func patient(tu *Tuning) { tu.CallTimeout = 30 * time.Second }

// steadyTiming is raft timing for tests under load on a shared machine:
// elections only when a leader is really gone, a short commit timeout
// (raft's pipeline sends on it when it falls behind).
func steadyTiming() Timing {
	t := DefaultTiming()
	t.HeartbeatTimeout, t.ElectionTimeout, t.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, time.Second
	t.CommitTimeout = 10 * time.Millisecond
	return t
}

// pipeTransport is bareTransport with pipelining of up to inflight appends.
func pipeTransport(t testing.TB, h *Host, group string, inflight int) *transport {
	t.Helper()
	tr, err := h.newTransport(&Group{spec: GroupSpec{Name: group, Timing: Timing{MaxInflightAppends: inflight}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// appendReq is the i-th request of a stream of one-entry appends.
func appendReq(i uint64) *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("1"), Addr: []byte("a")},
		Term: 1, Leader: []byte("a"), PrevLogEntry: i, PrevLogTerm: 1, LeaderCommitIndex: i,
		Entries: []*raft.Log{{Index: i + 1, Term: 1, Type: raft.LogCommand, Data: binary.BigEndian.AppendUint64(nil, i)}}}
}

// follow answers the appends that reach tr's raft side: Success unless
// reject says otherwise, LastLog the request's last entry. It waits for
// hold to close before the first answer, and ends when done closes.
func follow(tr *transport, hold, done <-chan struct{}, reject func(*raft.AppendEntriesRequest) bool) {
	select {
	case <-hold:
	case <-done:
		return
	}
	for {
		select {
		case rpc := <-tr.consumer:
			req := rpc.Command.(*raft.AppendEntriesRequest)
			rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.PrevLogEntry + 1, Success: !reject(req)}, nil)
		case <-done:
			return
		}
	}
}

// openPipe starts two hosts and a pipeline from the first to the second's
// group "g", whose raft side follow serves.
func openPipe(t *testing.T, inflight int, tune func(*Tuning), hold <-chan struct{}, reject func(*raft.AppendEntriesRequest) bool) raft.AppendPipeline {
	n := newTestNet(t, tune)
	a, c := n.start(1), n.start(2)
	to := pipeTransport(t, c, "g", inflight)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { follow(to, hold, done, reject) })
	t.Cleanup(func() { close(done); wg.Wait() })
	pl, err := pipeTransport(t, a, "g", inflight).AppendEntriesPipeline("2", raft.ServerAddress(c.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	return pl
}

// Futures come back in send order, each with its own answer, and the
// follower's raft sees the requests in send order.
func TestPipelineDeliversInOrder(t *testing.T) {
	open := make(chan struct{})
	close(open)
	var mu sync.Mutex // guards seen
	var seen []uint64
	pl := openPipe(t, 4, patient, open, func(req *raft.AppendEntriesRequest) bool {
		mu.Lock()
		seen = append(seen, req.PrevLogEntry)
		mu.Unlock()
		return false
	})
	const count = 300
	errs := make(chan error, 1)
	go func() { // raft's pipelineDecode, checking
		for i := uint64(1); i <= count; i++ {
			f := <-pl.Consumer()
			if err := f.Error(); err != nil {
				errs <- fmt.Errorf("future %d: %w", i, err)
				return
			}
			if req, resp := f.Request(), f.Response(); req.PrevLogEntry != i || !resp.Success || resp.LastLog != i+1 {
				errs <- fmt.Errorf("future %d: request %d, answer %+v", i, req.PrevLogEntry, resp)
				return
			}
		}
		errs <- nil
	}()
	for i := uint64(1); i <= count; i++ {
		if _, err := pl.AppendEntries(appendReq(i), new(raft.AppendEntriesResponse)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := count; len(seen) != want || !slices.IsSorted(seen) || seen[0] != 1 {
		t.Fatalf("the follower saw %d requests, sorted %v; want %d in send order", len(seen), slices.IsSorted(seen), want)
	}
}

// The hazard of hashicorp/raft v1.8.0's pipeline: once a follower rejects
// an append, raft stops reading Consumer while its sender keeps appending.
// Here the pipeline is full when the rejection comes, and the sender keeps
// appending; each append must return (with the rejection as the cause once
// it is delivered), and Close must return. A pipeline that blocks for room
// until raft reads its answers hangs here.
func TestPipelineRejectionDoesNotStallSender(t *testing.T) {
	const width = 4
	hold := make(chan struct{})
	const rejected = 2
	pl := openPipe(t, width, patient, hold, func(req *raft.AppendEntriesRequest) bool { return req.PrevLogEntry == rejected })
	for i := uint64(1); i <= width; i++ { // fill the pipeline
		if _, err := pl.AppendEntries(appendReq(i), new(raft.AppendEntriesResponse)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	decoded := make(chan []uint64, 1)
	go func() { // raft's pipelineDecode: stop at the first rejection
		var got []uint64
		for f := range pl.Consumer() {
			got = append(got, f.Request().PrevLogEntry)
			if !f.Response().Success {
				break
			}
		}
		decoded <- got
	}()
	sendErr := make(chan error, 1)
	go func() { // raft's sender at its worst: it keeps appending
		for i := uint64(width + 1); i < 10_000; i++ {
			if _, err := pl.AppendEntries(appendReq(i), new(raft.AppendEntriesResponse)); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- errors.New("10,000 appends accepted after a rejection")
	}()
	close(hold) // the follower answers
	select {
	case err := <-sendErr:
		if !errors.Is(err, ErrAppendRejected) || !errors.Is(err, raft.ErrPipelineShutdown) {
			t.Fatalf("append after the rejection: %v, want ErrAppendRejected and raft.ErrPipelineShutdown", err)
		}
	case <-time.After(hangBound):
		t.Fatalf("AppendEntries still blocked %v after the follower rejected an append", hangBound)
	}
	if got := <-decoded; !slices.Equal(got, []uint64{1, rejected}) {
		t.Fatalf("delivered %v, want [1 %d]", got, rejected)
	}
	closed := make(chan struct{})
	go func() { pl.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(hangBound):
		t.Fatalf("Close still blocked after %v", hangBound)
	}
	if _, err := pl.AppendEntries(appendReq(1), new(raft.AppendEntriesResponse)); !errors.Is(err, raft.ErrPipelineShutdown) {
		t.Fatalf("append after Close: %v, want raft.ErrPipelineShutdown", err)
	}
}

// A follower that does not answer breaks the pipeline within about a
// CallTimeout (its calls fail), and Close does not wait for answers due.
func TestPipelineSilentFollower(t *testing.T) {
	hold := make(chan struct{}) // never closed: the follower's raft takes nothing
	pl := openPipe(t, 2, func(tu *Tuning) { tu.CallTimeout = 3 * time.Second }, hold,
		func(*raft.AppendEntriesRequest) bool { return false })
	var err error
	for i := uint64(1); err == nil; i++ {
		_, err = pl.AppendEntries(appendReq(i), new(raft.AppendEntriesResponse))
	}
	if !errors.Is(err, raft.ErrPipelineShutdown) || !(errors.Is(err, ErrNoResponse) || errors.Is(err, ErrCallTimeout)) {
		t.Fatalf("append to a silent follower: %v, want ErrNoResponse or ErrCallTimeout", err)
	}
	f := <-pl.Consumer()
	if f.Error() == nil || f.Response().Success {
		t.Fatalf("first future: %v, %+v; want an error and no success", f.Error(), f.Response())
	}
	pl.Close()
}

// recordFSM records every command it applies, in order.
type recordFSM struct {
	mu   sync.Mutex // guards cmds
	cmds []uint64
	gate atomic.Pointer[chan struct{}] // when set, Apply waits for it to close
}

func (f *recordFSM) Apply(l *raft.Log) any {
	if g := f.gate.Load(); g != nil {
		<-*g
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmds = append(f.cmds, binary.BigEndian.Uint64(l.Data))
	return nil
}

func (f *recordFSM) applied() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.cmds)
}

// stall makes Apply wait until the returned func is called.
func (f *recordFSM) stall() (release func()) {
	ch := make(chan struct{})
	f.gate.Store(&ch)
	return func() { f.gate.Store(nil); close(ch) }
}

func (f *recordFSM) Snapshot() (raft.FSMSnapshot, error) { return countSnapshot{}, nil }
func (f *recordFSM) Restore(rc io.ReadCloser) error {
	rc.Close()
	return errors.New("recordFSM cannot restore")
}

// openRecorded opens group name on nodes 1..3 with a recordFSM each.
func openRecorded(t *testing.T, n *testNet, name string, timing Timing) ([]*Group, []*recordFSM) {
	t.Helper()
	var gs []*Group
	var fs []*recordFSM
	for id := int32(1); id <= 3; id++ {
		f := &recordFSM{}
		g, err := n.host(id).Open(GroupSpec{Name: name, Members: []int32{1, 2, 3},
			Dir: filepath.Join(n.base, fmt.Sprint(id), name), Timing: timing, FSM: f, LogStore: n.store})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		gs, fs = append(gs, g), append(fs, f)
	}
	return gs, fs
}

// proposer proposes distinct values from its own range to whichever of gs
// leads, until stop closes; it returns how many were acknowledged.
func proposer(gs []*Group, base uint64, stop <-chan struct{}) (acked []uint64) {
	for v := base; ; v++ {
		select {
		case <-stop:
			return acked
		default:
		}
		for _, g := range gs {
			if g.IsLeader() {
				if _, _, err := g.Propose(binary.BigEndian.AppendUint64(nil, v), time.Second).Wait(); err == nil {
					acked = append(acked, v)
				}
				break
			}
		}
	}
}

// agree waits until every FSM applied as many commands as want holds at
// least, then checks that all applied the same sequence, which holds each
// acknowledged value.
func agree(t *testing.T, fs []*recordFSM, acked []uint64) {
	t.Helper()
	var want []uint64
	waitLong(t, "every replica to apply the same entries", func() bool {
		a := fs[0].applied()
		for _, f := range fs[1:] {
			if !slices.Equal(f.applied(), a) {
				return false
			}
		}
		want = a
		return len(a) >= len(acked)
	})
	have := map[uint64]int{}
	for _, v := range want {
		have[v]++
	}
	for _, v := range acked {
		if have[v] == 0 {
			t.Fatalf("acknowledged value %d is not in the log", v)
		}
	}
}

// waitLong is waitFor with hangBound: for waits on the progress of a
// loaded group, which a shared machine can slow a lot.
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", hangBound, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// leaderOfLong is leaderOf with waitLong.
func leaderOfLong(t *testing.T, gs []*Group) int {
	t.Helper()
	var at int
	waitLong(t, "a leader", func() bool {
		for i, g := range gs {
			if g.IsLeader() {
				at = i
				return true
			}
		}
		return false
	})
	return at
}

// closeWithin closes gs in parallel and fails the test if any Close takes
// longer than hangBound (raft's Shutdown waits for its replication).
func closeWithin(t *testing.T, gs []*Group) {
	t.Helper()
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Go(func() { g.Close() })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangBound):
		t.Fatalf("Group.Close still blocked after %v", hangBound)
	}
}

// Under concurrent proposals and a leadership transfer, pipelined groups
// apply the same entries in the same order on every member.
func TestPipelinedReplicasAgree(t *testing.T) {
	n := newTestNet(t, nil)
	for id := int32(1); id <= 3; id++ {
		n.start(id)
	}
	timing := steadyTiming()
	timing.MaxInflightAppends = 4
	gs, fs := openRecorded(t, n, "p", timing)
	l := leaderOfLong(t, gs)
	stop := make(chan struct{})
	var mu sync.Mutex // guards acked
	var acked []uint64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			a := proposer(gs, uint64(w)<<32+1, stop)
			mu.Lock()
			acked = append(acked, a...)
			mu.Unlock()
		})
	}
	waitLong(t, "entries on every member", func() bool { return len(fs[0].applied()) > 200 })
	next := int32((l+1)%3 + 1)
	if err := gs[l].TransferLeadership(testCtx(t), next); err != nil {
		t.Logf("transfer to %d: %v", next, err) // an election may have raced it; the test holds either way
	}
	waitLong(t, "more entries", func() bool { return len(fs[0].applied()) > 600 })
	close(stop)
	wg.Wait()
	agree(t, fs, acked)
	var pipelines uint64
	for id := int32(1); id <= 3; id++ {
		pipelines += n.host(id).Stats().PipelinesOpened
	}
	if pipelines == 0 {
		t.Fatal("no pipeline was opened")
	}
	closeWithin(t, gs)
}

// A follower whose raft stalls while its pipeline is full (its FSM blocks,
// so raft stops taking RPCs) makes the leader's pipelined calls fail; when
// it resumes, it rejects the appends that follow the ones it dropped (its
// log has a gap). The leader must fall back to one AppendEntries at a time
// and bring it up to date, and every member must shut down.
func TestPipelinedFollowerCatchesUpAfterStall(t *testing.T) {
	n := newTestNet(t, func(tu *Tuning) { tu.CallTimeout = time.Second })
	for id := int32(1); id <= 3; id++ {
		n.start(id)
	}
	timing := steadyTiming()
	timing.MaxInflightAppends = 2
	gs, fs := openRecorded(t, n, "s", timing)
	stop := make(chan struct{})
	var mu sync.Mutex // guards acked
	var acked []uint64
	var wg sync.WaitGroup
	for w := range 8 { // enough that raft's sender nearly always has new entries to send
		wg.Go(func() {
			a := proposer(gs, uint64(w)<<32+1, stop)
			mu.Lock()
			acked = append(acked, a...)
			mu.Unlock()
		})
	}
	stalled := 0
	for round := 0; round < 12 && stalled < 6; round++ {
		l := leaderOfLong(t, gs)
		leaderHost := n.host(int32(l + 1))
		waitLong(t, "a pipeline", func() bool { return leaderHost.Stats().PipelinesOpened > 0 })
		f := (l + 1 + round%2) % 3 // a follower
		before := leaderHost.Stats().PipelinesOpened
		release := fs[f].stall()
		// Raft's apply queue (128 batches) fills, then its main loop
		// blocks and the follower's log stops growing.
		waitLong(t, "the follower to fall behind", func() bool {
			return !gs[l].IsLeader() || gs[l].raft.LastIndex() > gs[f].raft.LastIndex()+300
		})
		time.Sleep(2 * n.host(1).tun.CallTimeout) // let the pipelined calls fail
		release()
		if !gs[l].IsLeader() { // a busy machine cost the leadership: try again
			continue
		}
		stalled++
		waitLong(t, "the follower to catch up", func() bool {
			return gs[f].raft.LastIndex()+50 >= gs[l].raft.LastIndex()
		})
		if gs[l].IsLeader() {
			waitLong(t, "a new pipeline", func() bool { return leaderHost.Stats().PipelinesOpened > before })
		}
	}
	close(stop)
	wg.Wait()
	if stalled == 0 {
		t.Fatal("the leader changed in every round: no stall was tested")
	}
	agree(t, fs, acked)
	closeWithin(t, gs)
}
