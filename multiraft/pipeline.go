package multiraft

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"

	"github.com/minikafka/minikafka-go/internal/frame"
)

// A pipeline is raft's AppendPipeline to one follower: AppendEntries
// requests go out one after another on one call stream without waiting
// for their answers, at most Timing.MaxInflightAppends of them unanswered,
// and their futures come back on Consumer in send order. The peer serves a
// call stream's calls in order (serveCalls), so the follower's raft gets
// them in send order too; calls on separate streams could overtake each
// other and be rejected as gaps.
//
// hashicorp/raft v1.8.0 stops reading Consumer as soon as a response says
// Success=false or a newer term (pipelineDecode), while its sender may
// still be inside AppendEntries; a transport that then blocks for queue
// space strands the follower without entries and hangs Shutdown. So this
// pipeline breaks at the first such response, at any failed call and at
// Close: from then on AppendEntries returns an error at once, and no
// later future is delivered. AppendEntries never waits longer than
// Tuning.CallTimeout for room in the pipeline either.
type pipeline struct {
	p       *peer
	id      raft.ServerID // the follower
	prog    *progress     // its group's progress
	st      *yamux.Stream
	group   string
	timeout time.Duration
	max     uint32 // Tuning.MaxFrame

	slots chan struct{}          // a token per future sent and not yet delivered
	sent  chan *appendFuture     // futures whose requests were written, in send order
	done  chan raft.AppendFuture // Consumer

	pace func(n int) error // waits until n bytes may go to a throttled member

	sendMu sync.Mutex // guards fresh and writes to st, and keeps sent in write order
	fresh  bool       // the stream's open frame has not been sent yet

	dlMu   sync.Mutex    // orders the reader's read deadlines against Close's
	closed chan struct{} // closed by Close, under dlMu

	broken    chan struct{} // closed once the pipeline takes no more requests; err says why
	err       error         // set before broken closes
	breakOnce sync.Once
	closeOnce sync.Once
	wg        sync.WaitGroup // the reader
}

// appendFuture is one pipelined AppendEntries; it is complete before it is
// delivered.
type appendFuture struct {
	start time.Time
	req   *raft.AppendEntriesRequest
	resp  *raft.AppendEntriesResponse
	err   error         // set before done closes
	done  chan struct{} // closed when the answer (or the failure) is in
}

var (
	_ raft.AppendPipeline = (*pipeline)(nil)
	_ raft.AppendFuture   = (*appendFuture)(nil)
)

func (f *appendFuture) Error() error {
	<-f.done
	return f.err
}
func (f *appendFuture) Start() time.Time                      { return f.start }
func (f *appendFuture) Request() *raft.AppendEntriesRequest   { return f.req }
func (f *appendFuture) Response() *raft.AppendEntriesResponse { return f.resp }

// AppendEntriesPipeline implements raft.Transport: with
// Timing.MaxInflightAppends set, a pipeline on a call stream of the
// session to the peer; otherwise raft sends one AppendEntries at a time
// per follower.
func (t *transport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	inflight := t.g.spec.Timing.MaxInflightAppends
	if inflight <= 0 {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	if t.isClosed() {
		return nil, raft.ErrTransportShutdown
	}
	p, err := t.h.peer(t.peerAddr(id, target))
	if err != nil {
		return nil, err
	}
	st, fresh, err := p.callStream(time.Now().Add(t.h.tun.CallTimeout))
	if err != nil {
		return nil, err
	}
	pl := &pipeline{
		p: p, id: id, prog: &t.progress, st: st, group: t.group, timeout: t.h.tun.CallTimeout, max: uint32(t.h.tun.MaxFrame),
		pace:   func(n int) error { return t.pace(id, n) },
		slots:  make(chan struct{}, inflight),
		sent:   make(chan *appendFuture, inflight),
		done:   make(chan raft.AppendFuture, inflight),
		fresh:  fresh,
		closed: make(chan struct{}),
		broken: make(chan struct{}),
	}
	t.h.stats.pipelinesOpened.Add(1)
	pl.wg.Add(1)
	go pl.read()
	return pl, nil
}

// AppendEntries implements raft.AppendPipeline: it writes the request and
// returns its future without waiting for the answer. It waits for room
// while MaxInflightAppends answers are outstanding, up to CallTimeout, and
// fails at once, with an error wrapping raft.ErrPipelineShutdown and the
// cause, when the pipeline is broken or closed.
func (pl *pipeline) AppendEntries(req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if err := pl.brokenErr(); err != nil {
		return nil, err
	}
	if err := pl.pace(entryBytes(req)); err != nil {
		return nil, pl.fail(err)
	}
	select {
	case pl.slots <- struct{}{}:
	default:
		timer := time.NewTimer(pl.timeout)
		select {
		case pl.slots <- struct{}{}:
			timer.Stop()
		case <-pl.broken: // the slot may never free: its answer is not delivered
			timer.Stop()
			return nil, pl.err
		case <-timer.C: // no answer delivered in a CallTimeout: the follower or raft stopped
			return nil, pl.fail(ErrCallTimeout)
		}
	}
	f := &appendFuture{start: time.Now(), req: req, resp: resp, done: make(chan struct{})}
	pl.sendMu.Lock()
	defer pl.sendMu.Unlock()
	if err := pl.brokenErr(); err != nil { // broken while waiting for the slot
		return nil, err
	}
	bp := callBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	if pl.fresh {
		buf = appendOpen(buf, streamCalls, "")
	}
	buf, err := appendRequest(buf, callAppendEntries, pl.group, req)
	if err != nil {
		callBufs.Put(bp)
		return nil, pl.fail(err)
	}
	_ = pl.st.SetWriteDeadline(time.Now().Add(pl.timeout))
	_, err = pl.st.Write(buf)
	*bp = buf[:0] // yamux is done with buf once Write returns, also on a timeout
	callBufs.Put(bp)
	if err != nil {
		return nil, pl.fail(pl.p.fail("pipeline", timeoutAsCallTimeout(err)))
	}
	pl.fresh = false
	pl.p.h.stats.callsSent.Add(1)
	pl.sent <- f // never blocks: f holds a slot
	return f, nil
}

// Consumer implements raft.AppendPipeline: completed futures, in send
// order, up to the first that failed or was rejected.
func (pl *pipeline) Consumer() <-chan raft.AppendFuture { return pl.done }

// Close implements raft.AppendPipeline: the pipeline breaks, the stream
// closes (answers still due are dropped) and the reader ends. Idempotent.
func (pl *pipeline) Close() error {
	pl.closeOnce.Do(func() {
		pl.fail(raft.ErrPipelineShutdown)
		pl.dlMu.Lock()
		close(pl.closed)
		_ = pl.st.SetDeadline(time.Unix(1, 0)) // wake a blocked read or write
		pl.dlMu.Unlock()
		_ = pl.st.Close()
		pl.wg.Wait()
		// Futures that will never be answered complete with the cause.
		pl.sendMu.Lock()
		defer pl.sendMu.Unlock()
		for {
			select {
			case f := <-pl.sent:
				f.err = pl.err
				close(f.done)
			default:
				return
			}
		}
	})
	return nil
}

// read matches answers to the futures in sent, in order, and delivers
// them on done until the pipeline breaks or closes. It is owned by the
// pipeline, whose Close ends it.
func (pl *pipeline) read() {
	defer pl.wg.Done()
	var buf []byte
	for {
		var f *appendFuture
		select {
		case f = <-pl.sent:
		case <-pl.broken: // no future after the break is delivered
			return
		}
		pl.dlMu.Lock()
		select {
		case <-pl.closed:
			pl.dlMu.Unlock()
			f.err = pl.err // Close broke the pipeline first
			close(f.done)
			return
		default:
		}
		_ = pl.st.SetReadDeadline(time.Now().Add(pl.timeout))
		pl.dlMu.Unlock()
		body, err := frame.ReadInto(pl.st, 1, pl.max, buf)
		if err == nil {
			buf = body[:0]
			err = pl.p.result(body, f.resp)
		} else {
			err = pl.p.fail("pipeline", timeoutAsCallTimeout(err))
		}
		rejected := err == nil && (!f.resp.Success || f.resp.Term > f.req.Term)
		if err != nil {
			*f.resp = raft.AppendEntriesResponse{} // raft reads it without looking at Error
			f.err = err
		} else {
			pl.prog.record(pl.id, f.req, f.resp, time.Now(), 0) // appends: no Quiesce
		}
		close(f.done)
		// Break before delivering: raft reads no more after a failure, and
		// a sender waiting for room must not take the slot freed below.
		switch {
		case err != nil:
			pl.fail(err)
		case rejected:
			pl.fail(ErrAppendRejected)
		}
		select {
		case pl.done <- f:
		case <-pl.closed: // raft stopped reading and closed the pipeline
			return
		}
		if err != nil || rejected {
			return
		}
		<-pl.slots
	}
}

// fail breaks the pipeline with cause, unless it broke already, and
// returns the error AppendEntries reports from now on.
func (pl *pipeline) fail(cause error) error {
	pl.breakOnce.Do(func() {
		pl.err = fmt.Errorf("%w: %w", raft.ErrPipelineShutdown, cause)
		if errors.Is(cause, raft.ErrPipelineShutdown) {
			pl.err = cause
		}
		close(pl.broken)
	})
	<-pl.broken
	return pl.err
}

// brokenErr is why the pipeline broke, or nil.
func (pl *pipeline) brokenErr() error {
	select {
	case <-pl.broken:
		return pl.err
	default:
		return nil
	}
}
