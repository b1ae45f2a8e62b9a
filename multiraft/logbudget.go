package multiraft

import (
	"sync"
	"sync/atomic"
)

// A node-wide bound on the Raft entries that the groups sharing the
// Pebble log store hold together: a quarter of its memtable, so that
// entries are mostly trimmed before a flush writes them out (measured in
// docs/performance.md: each group keeping its own 40 MiB, twelve busy
// groups made Pebble flush and compact live entries). Over the bound, the
// group holding most trims as if over its own SnapshotBytes, keeping a
// quarter of its entries (at most TrailingBytes); the next is picked once
// that trim is done. A group is picked only while it holds minTrim bytes
// more than after its last trim by the budget, so that many groups holding
// a little each are left to Pebble, not snapshotted for a few bytes each.
type logBudget struct {
	limit   int64
	minTrim int64
	total   atomic.Int64  // bytes the registered logs hold
	trims   atomic.Uint64 // trims kicked
	wake    chan struct{} // the loop's, buffered 1

	mu      sync.Mutex // guards logs and pending
	logs    map[*sizedLog]struct{}
	pending *sizedLog // kicked; its trim is not done yet
}

func newLogBudget(memTable int64) *logBudget {
	limit := memTable / 4
	return &logBudget{limit: limit, minTrim: max(limit/32, 64<<10), wake: make(chan struct{}, 1),
		logs: map[*sizedLog]struct{}{}}
}

// register counts s from now on; it must trim on s.budgetKick.
func (b *logBudget) register(s *sizedLog) {
	b.mu.Lock()
	b.logs[s] = struct{}{}
	b.mu.Unlock()
	s.countIn(true)
}

// remove stops counting s (its group closes).
func (b *logBudget) remove(s *sizedLog) {
	b.mu.Lock()
	delete(b.logs, s)
	if b.pending == s {
		b.pending = nil
	}
	b.mu.Unlock()
	s.countIn(false)
}

// add counts a change of a registered log's bytes. Over the bound, it
// wakes the loop as the total crosses it, then only for a log the loop
// could pick (eligible): with none to pick, each store would otherwise
// cost a scan of every registered log.
func (b *logBudget) add(delta int64, eligible bool) {
	if n := b.total.Add(delta); n > b.limit && (eligible || n-delta <= b.limit) {
		b.poke()
	}
}

// eligible reports whether the loop may pick a log holding held bytes,
// base after its last budget trim.
func (b *logBudget) eligible(held, base int64) bool { return held-base >= b.minTrim }

// trimmed is a log's trimmer telling that the trim it was kicked for is
// done (or failed).
func (b *logBudget) trimmed(s *sizedLog) {
	b.mu.Lock()
	if b.pending == s {
		b.pending = nil
	}
	b.mu.Unlock()
	b.poke()
}

func (b *logBudget) poke() {
	select {
	case b.wake <- struct{}{}:
	default: // the loop has a wake-up pending already
	}
}

// loop kicks the trim of the largest log while the total is over the
// limit, one at a time, until stop is closed. Owned by the pebbleLog.
func (b *logBudget) loop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-b.wake:
		}
		b.mu.Lock()
		if b.pending == nil && b.total.Load() > b.limit {
			if s := b.largestLocked(); s != nil {
				b.pending = s
				b.trims.Add(1)
				s.budgetBase.Store(s.held.Load())
				select {
				case s.budgetKick <- struct{}{}:
				default: // its trimmer has one to take already
				}
			}
		}
		b.mu.Unlock()
	}
}

// largestLocked is the registered log holding most bytes, of those
// holding at least minTrim more than after their last budget trim.
func (b *logBudget) largestLocked() *sizedLog {
	var best *sizedLog
	var most int64
	for s := range b.logs {
		held := s.held.Load()
		if b.eligible(held, s.budgetBase.Load()) && held > most {
			best, most = s, held
		}
	}
	return best
}

// LogBudget is what the groups sharing the node's Pebble log store hold
// of their budget (Host.LogBudget).
type LogBudget struct {
	Held, Limit int64  // bytes of entries held; the budget
	Trims       uint64 // trims the budget asked of the group holding most
}

// LogBudget reports the node-wide Raft log budget; zero before a pebble
// group opened the store.
func (h *Host) LogBudget() LogBudget {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	if h.plog == nil {
		return LogBudget{}
	}
	b := h.plog.budget
	return LogBudget{Held: b.total.Load(), Limit: b.limit, Trims: b.trims.Load()}
}
