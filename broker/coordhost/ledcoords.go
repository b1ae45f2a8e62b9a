package coordhost

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ledCoords are the coordinators of one internal topic this node runs
// (groups on __consumer_offsets, transactions on __transaction_state): one
// for each partition of it the node leads. A coordinator starts once its
// partition's new leader has applied every entry of earlier terms (until
// then its view is behind, and requests are answered
// COORDINATOR_LOAD_IN_PROGRESS), and closes when the leadership is lost.
type ledCoords[C interface{ Close() }] struct {
	h     *Host
	topic string                                    // the internal topic
	what  string                                    // names the coordinators in log lines
	start func(lr *Replica, term uint64) (C, error) // makes a settled partition's coordinator

	// mu guards slots and closed. Coordinators are created and closed
	// outside it.
	mu     sync.Mutex
	slots  map[int32]*ledSlot[C] // by partition of topic
	closed bool
}

// ledSlot is one led partition's coordinator.
type ledSlot[C any] struct {
	term    uint64
	coord   C
	running bool // coord is set: false while loading
	// loaded is closed when the slot stops loading: its coordinator runs,
	// or the slot was dropped while loading. Requests wait on it (get).
	loaded chan struct{}
}

// settle marks the slot no longer loading; the caller holds mu.
func (s *ledSlot[C]) settle() {
	select {
	case <-s.loaded:
	default:
		close(s.loaded)
	}
}

func newLedCoords[C interface{ Close() }](h *Host, topic, what string, start func(*Replica, uint64) (C, error)) ledCoords[C] {
	return ledCoords[C]{h: h, topic: topic, what: what, start: start, slots: make(map[int32]*ledSlot[C])}
}

// leadership follows this node's leadership of one replica of the topic
// (Host.OnLeader): a gain starts loading a coordinator, a loss
// closes it.
func (lc *ledCoords[C]) leadership(lr *Replica, leader bool, term uint64) {
	p := lr.Info().Partition
	lc.mu.Lock()
	old := lc.slots[p]
	delete(lc.slots, p)
	if old != nil {
		old.settle()
	}
	if leader && !lc.closed {
		lc.slots[p] = &ledSlot[C]{term: term, loaded: make(chan struct{})}
	}
	lc.mu.Unlock()
	if old != nil && old.running {
		// Not on this goroutine, which Raft may need to resolve the
		// writes Close waits for.
		lc.h.wg.Add(1)
		go func() { // owned by the Host: Wait
			defer lc.h.wg.Done()
			old.coord.Close()
		}()
	}
	if leader {
		lc.h.wg.Add(1)
		go lc.load(lr, term) // owned by the Host: ends with its context or the term
	}
}

// load starts the coordinator of a partition this node leads in term,
// once the leader has settled; it gives up when the term ends.
func (lc *ledCoords[C]) load(lr *Replica, term uint64) {
	defer lc.h.wg.Done()
	h := lc.h
	select { // the leadership callback can come before OpenReplica returns
	case <-lr.Opened():
	case <-h.ctx.Done():
		return
	}
	for {
		if h.ctx.Err() != nil || !lc.current(lr.Info().Partition, term) {
			return
		}
		ctx, cancel := context.WithTimeout(h.ctx, h.cfg.Tuning.Proposal)
		err := lr.Partition().Settle(ctx, h.cfg.Tuning.Proposal)
		cancel()
		if err == nil {
			break
		}
		h.logger.Debug(lc.what+" waits for its partition to settle", "partition", lr.Info().Partition, "err", err)
		select {
		case <-h.ctx.Done():
			return
		case <-time.After(h.cfg.Tuning.SettleRetry):
		}
	}
	c, err := lc.start(lr, term)
	if err != nil {
		h.logger.Error(lc.what+" not started", "partition", lr.Info().Partition, "err", err)
		return
	}
	if !lc.install(lr.Info().Partition, term, c) {
		c.Close() // the leadership ended while loading
		return
	}
	h.logger.Debug(lc.what+" started", "partition", lr.Info().Partition, "epoch", term)
}

// install makes c the running coordinator of p's slot of term; false if
// that slot is gone.
func (lc *ledCoords[C]) install(p int32, term uint64, c C) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	slot := lc.slots[p]
	if lc.closed || slot == nil || slot.term != term {
		return false
	}
	slot.coord, slot.running = c, true
	slot.settle()
	return true
}

// current reports whether p is still led in term.
func (lc *ledCoords[C]) current(p int32, term uint64) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	s := lc.slots[p]
	return s != nil && s.term == term
}

// get returns the coordinator of partition p, or the error to answer. A
// coordinator that is loading is waited for, up to
// Tuning.LoadWait or ctx's end, and only then answered
// COORDINATOR_LOAD_IN_PROGRESS: a new leader's load is usually one Raft
// round, and some clients do not retry that error on their first join
// (kafkajs's consumer crashes and restarts).
func (lc *ledCoords[C]) get(ctx context.Context, p int32) (C, error) {
	wait := lc.h.cfg.Tuning.LoadWait
	c, loading, err := lc.lookup(p)
	if loading == nil || wait <= 0 {
		return c, err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-loading:
	case <-t.C:
	case <-ctx.Done():
	}
	c, _, err = lc.lookup(p)
	return c, err
}

// lookup returns p's running coordinator, or the error to answer and,
// while p's coordinator is loading, the channel closed when it stops.
func (lc *ledCoords[C]) lookup(p int32) (C, <-chan struct{}, error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	var none C
	s := lc.slots[p]
	switch {
	case s == nil:
		return none, nil, fmt.Errorf("%w: node %d does not lead %s-%d", kerr.NotCoordinator, lc.h.cfg.NodeID, lc.topic, p)
	case !s.running:
		return none, s.loaded, fmt.Errorf("%w: %s-%d is loading", kerr.CoordinatorLoadInProgress, lc.topic, p)
	}
	return s.coord, nil, nil
}

// running returns every running coordinator, and
// COORDINATOR_LOAD_IN_PROGRESS with them while one is loading.
func (lc *ledCoords[C]) running() ([]C, error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	var out []C
	var err error
	for _, s := range lc.slots {
		if !s.running {
			err = kerr.CoordinatorLoadInProgress
			continue
		}
		out = append(out, s.coord)
	}
	return out, err
}

// closeAll closes every coordinator; no new one starts after it.
func (lc *ledCoords[C]) closeAll() {
	lc.mu.Lock()
	lc.closed = true
	slots := lc.slots
	lc.slots = make(map[int32]*ledSlot[C])
	for _, s := range slots {
		s.settle()
	}
	lc.mu.Unlock()
	for _, s := range slots {
		if s.running {
			s.coord.Close()
		}
	}
}
