package kafkaapi

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// budget is the node-wide bound on the bytes of requests read and not yet
// answered (Config.QueuedMaxRequestBytes), in two halves: frames, charged
// before a frame is read, and costs, charged once the frame is read and
// its cost known (RequestCost), before it is decoded.
//
// The halves keep it free of deadlock: a reader holding a frame may wait
// for costs, but whoever holds costs has started its request and needs
// nothing more from the budget, so costs always come back as requests
// are answered. With one pool, readers holding frames could spend it all
// and wait for one another.
type budget struct {
	limit         int64 // both halves
	frames, costs pool
	// used is what readers hold of both halves, peak its highest value,
	// waiting the readers waiting for room. used is raised after a half
	// grants and lowered before it is given back, so it never passes
	// limit.
	used, peak, waiting atomic.Int64
}

// charge is what one request holds of a budget.
type charge struct{ frame, cost int64 }

func newBudget(limit int64) *budget {
	b := &budget{limit: limit}
	b.frames.free = limit / 2
	b.costs.free = MaxRequestCost(limit)
	return b
}

// maxFrame and maxCost are the most one request may take of each half.
func (b *budget) maxFrame() int64 { return b.limit / 2 }
func (b *budget) maxCost() int64  { return MaxRequestCost(b.limit) }

func (b *budget) takeFrame(ctx context.Context, n int64) error { return b.take(ctx, &b.frames, n) }
func (b *budget) takeCost(ctx context.Context, n int64) error  { return b.take(ctx, &b.costs, n) }

// take takes n bytes of a half, n at most its size, waiting until they
// are free or ctx is done.
func (b *budget) take(ctx context.Context, half *pool, n int64) error {
	if n <= 0 {
		return nil
	}
	if err := half.take(ctx, n, &b.waiting); err != nil {
		return err
	}
	used := b.used.Add(n)
	for p := b.peak.Load(); used > p && !b.peak.CompareAndSwap(p, used); p = b.peak.Load() {
	}
	return nil
}

// release gives back what a request holds.
func (b *budget) release(c charge) {
	b.used.Add(-c.frame - c.cost)
	b.frames.release(c.frame)
	b.costs.release(c.cost)
}

// pool is one half of a budget. A taker gets its bytes as soon as they
// are free, even if an earlier, larger taker still waits (as Kafka
// unmutes whichever channel finds room): a large request may wait while
// smaller ones pass, but one reader that holds a large frame and stalls
// cannot stop the others.
type pool struct {
	mu      sync.Mutex // guards free and waiters
	free    int64
	waiters list.List // *poolWaiter, oldest first
}

type poolWaiter struct {
	n     int64
	ready chan struct{} // closed once granted
}

// take takes n bytes, waiting until they are free or ctx is done;
// waiting counts the takers waiting.
func (p *pool) take(ctx context.Context, n int64, waiting *atomic.Int64) error {
	p.mu.Lock()
	if p.free >= n {
		p.free -= n
		p.mu.Unlock()
		return nil
	}
	w := &poolWaiter{n: n, ready: make(chan struct{})}
	e := p.waiters.PushBack(w)
	p.mu.Unlock()
	waiting.Add(1)
	defer waiting.Add(-1)
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		p.free += n
		p.grantLocked()
	default:
		p.waiters.Remove(e)
	}
	return ctx.Err()
}

// release gives back n bytes and grants the waiters they make room for,
// oldest first.
func (p *pool) release(n int64) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free += n
	p.grantLocked()
}

func (p *pool) grantLocked() {
	for e := p.waiters.Front(); e != nil && p.free > 0; {
		next := e.Next()
		if w := e.Value.(*poolWaiter); w.n <= p.free {
			p.free -= w.n
			close(w.ready)
			p.waiters.Remove(e)
		}
		e = next
	}
}

// MaxRequestCost is the most a request may cost besides its frame
// (RequestCost) under Config.QueuedMaxRequestBytes of queued: half of it,
// the other half being for frames.
func MaxRequestCost(queued int64) int64 { return queued - queued/2 }

// RequestCostError is a request whose estimated cost besides its frame
// (see Config.QueuedMaxRequestBytes) passes the half of the budget for
// costs: it could never be admitted, so its connection closes, as for a
// frame over Config.MaxRequestBytes.
type RequestCostError struct {
	Key       int16
	Size      int   // the frame's bytes
	Cost, Max int64 // the estimated cost besides the frame, and the most allowed
}

func (e *RequestCostError) Error() string {
	return fmt.Sprintf("kafkaapi: a %s request of %d bytes would cost %d more, past half of queued_max_request_bytes (%d)",
		apiName(e.Key), e.Size, e.Cost, e.Max)
}
func (e *RequestCostError) Unwrap() error { return ErrProtocol }
