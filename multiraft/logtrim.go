package multiraft

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Trimming the log by bytes (Timing.SnapshotBytes, TrailingBytes): a
// group's sizedLog counts the bytes of the entries it stores; once they
// pass TrailingBytes + SnapshotBytes, and SnapshotBytes more were stored
// since the last trim, it kicks the group's trimmer, which sets raft's
// TrailingLogs to the newest entries that fit in TrailingBytes (at most
// Timing.TrailingLogs) and takes a snapshot, after which raft deletes the
// rest. A leader keeps more for a follower that is behind but on its way,
// back to what it matched and up to TrailingBytes + SnapshotBytes: a
// follower that misses an entry gets a snapshot, which is the partition's
// whole log, and on a disk that holds one copy of it there is no room
// for a second. Entries stored before the group opened are not counted: a
// restarted group's first trim by bytes comes once its new entries pass
// the bound, or earlier through SnapshotThreshold.
//
// Raft checks its own SnapshotThreshold only every SnapshotInterval (one
// to two minutes): a group of small entries (a coordinator's records)
// held thousands between checks, which filled the node's log budget, made
// the busiest group trim in small steps and reached sstables, where
// compactions rewrote them. So a sizedLog that trims by bytes also kicks
// once SnapshotThreshold entries were stored since its last trim (or kick),
// as they are stored.

// entryOverhead approximates what a stored entry costs besides its Data
// and Extensions (key, index, term, type, time).
const entryOverhead = 32

// sizedLog is a raft.LogStore that keeps the size of each entry it holds,
// in index order. Its mutex guards first, sizes, total, base and counted: raft
// writes from its own goroutine and the trimmer reads from another.
type sizedLog struct {
	raft.LogStore
	limit int64 // TrailingBytes + SnapshotBytes; 0: never kick
	step  int64 // SnapshotBytes
	// stepN is SnapshotThreshold: entries stored since baseN that kick
	// (0: none).
	stepN int
	// keep, if set, is the oldest entry a head deletion must leave (0:
	// none): Group.keepFrom.
	keep func() uint64
	kick chan struct{} // the trimmer's, buffered 1
	// budget, if set, is the node-wide bound this log counts toward; its
	// loop sends on budgetKick (buffered 1) when this log is to trim.
	budget     *logBudget
	budgetKick chan struct{}
	held       atomic.Int64 // total, for the budget's loop
	budgetBase atomic.Int64 // held when the budget last picked or trimmed this log

	mu    sync.Mutex
	first uint64  // index of sizes[0]
	sizes []int64 // the known entries' sizes, contiguous from first
	total int64   // sum of sizes
	base  int64   // total after the last trim, or at the last kick since
	baseN int     // len(sizes) after the last trim, or at the last kick since
	// counted: budget counts total (countIn), between the group's start
	// and its Close.
	counted bool
}

func entrySize(l *raft.Log) int64 { return int64(len(l.Data) + len(l.Extensions) + entryOverhead) }

func (s *sizedLog) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores the entries and records their sizes; an entry that
// does not follow the known ones (after a restart) starts the count anew,
// one that overwrites them (a follower's conflicting suffix) replaces
// them.
func (s *sizedLog) StoreLogs(logs []*raft.Log) error {
	if err := s.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	s.change(func() {
		for _, l := range logs {
			next := s.first + uint64(len(s.sizes))
			switch {
			case len(s.sizes) == 0 || l.Index > next || l.Index < s.first:
				s.first, s.sizes, s.total, s.baseN = l.Index, s.sizes[:0], 0, 0
			case l.Index < next:
				s.dropFrom(l.Index)
			}
			sz := entrySize(l)
			s.sizes = append(s.sizes, sz)
			s.total += sz
		}
		// Past the limit and a step past the last trim (or kick), or
		// stepN entries past it, kick.
		byBytes := s.total > s.limit && s.total > s.base+s.step
		if s.limit > 0 && (byBytes || s.stepN > 0 && len(s.sizes) >= s.baseN+s.stepN) {
			s.base, s.baseN = s.total, len(s.sizes)
			select {
			case s.kick <- struct{}{}:
			default: // a trim is pending already
			}
		}
	})
	return nil
}

// DeleteRange deletes lo..hi and forgets their sizes: a head (raft's
// compaction, which stops short of what keep says a follower needs) or a
// suffix.
func (s *sizedLog) DeleteRange(lo, hi uint64) error {
	s.mu.Lock()
	head := len(s.sizes) == 0 || lo <= s.first
	s.mu.Unlock()
	held := false // keep spared entries for a follower
	if head && s.keep != nil {
		if k := s.keep(); k > 0 && hi >= k {
			if k <= lo {
				return nil
			}
			hi, held = k-1, true
		}
	}
	if err := s.LogStore.DeleteRange(lo, hi); err != nil {
		return err
	}
	s.change(func() { s.forget(lo, hi, head, held) })
	return nil
}

// forget drops the sizes of deleted entries lo..hi: a head (held: short
// of what raft asked, for a follower) or a suffix. Under s.mu.
func (s *sizedLog) forget(lo, hi uint64, head, held bool) {
	if head {
		defer func() { s.budgetBase.Store(s.total); s.baseN = len(s.sizes) }()
	}
	if len(s.sizes) == 0 {
		return
	}
	last := s.first + uint64(len(s.sizes)) - 1
	switch {
	case lo <= s.first && hi >= last:
		s.sizes, s.total, s.base = s.sizes[:0], 0, 0
	case lo <= s.first && hi >= s.first:
		n := int(hi - s.first + 1)
		for _, sz := range s.sizes[:n] {
			s.total -= sz
		}
		s.sizes = append(s.sizes[:0], s.sizes[n:]...)
		// The next kick comes a step past what a trim held back for a
		// follower, which a snapshot sooner would not free; otherwise
		// once past the limit, whatever arrived while the snapshot was
		// taken (a trim by raft's TrailingLogs keeps that too).
		s.first, s.base = hi+1, s.total
		if !held {
			s.base = min(s.total, s.limit-s.step)
		}
	case lo > s.first && lo <= last:
		s.dropFrom(lo)
	}
}

// change runs f under s.mu and tells the budget, after, how f changed
// the bytes held.
func (s *sizedLog) change(f func()) {
	s.mu.Lock()
	before := s.total
	f()
	after, counted := s.total, s.counted
	s.held.Store(after)
	s.mu.Unlock()
	if counted && after != before {
		s.budget.add(after-before, s.budget.eligible(after, s.budgetBase.Load()))
	}
}

// countIn makes the budget count s's bytes (on) or stop counting them.
func (s *sizedLog) countIn(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counted == on {
		return
	}
	s.counted = on
	if on {
		s.budget.add(s.total, s.budget.eligible(s.total, s.budgetBase.Load()))
	} else {
		s.budget.add(-s.total, false)
	}
}

// dropFrom forgets the sizes from index i on; i is in the known range.
func (s *sizedLog) dropFrom(i uint64) {
	k := int(i - s.first)
	for _, sz := range s.sizes[k:] {
		s.total -= sz
	}
	s.sizes = s.sizes[:k]
}

// trailing is how many of the newest known entries fit in bytes (at
// least one, so that a follower one entry behind needs no snapshot).
func (s *sizedLog) trailing(bytes int64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum int64
	n := 0
	for i := len(s.sizes) - 1; i >= 0; i-- {
		if sum += s.sizes[i]; sum > bytes && n > 0 {
			break
		}
		n++
	}
	return uint64(n)
}

// bytesFrom is the size of the known entries from index i on.
func (s *sizedLog) bytesFrom(i uint64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i <= s.first {
		return s.total
	}
	var sum int64
	for _, sz := range s.sizes[min(int(i-s.first), len(s.sizes)):] {
		sum += sz
	}
	return sum
}

// bytes is the size of the known entries.
func (s *sizedLog) bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// sizedLog is raft's view of the group's store: it counts the entries'
// bytes and trims by them (logtrim.go), within the node-wide budget when
// the store is the node's Pebble DB (logbudget.go).
func (g *Group) sizedLog(store logStore) *sizedLog {
	s := &sizedLog{LogStore: g.guard, kick: make(chan struct{}, 1)}
	t := g.spec.Timing
	if t.SnapshotBytes > 0 {
		s.limit, s.step, s.keep = t.SnapshotBytes+t.TrailingBytes, t.SnapshotBytes, g.keepFrom
		s.stepN = int(t.SnapshotThreshold)
		if v, ok := store.(*pebbleView); ok {
			s.budget, s.budgetKick = v.pl.budget, make(chan struct{}, 1)
		}
	}
	return s
}

// trimLoop is the group's trimmer: on each kick it bounds raft's
// TrailingLogs by TrailingBytes and takes a snapshot; on a kick of the
// node-wide budget, by a quarter of the log's bytes if that is less, and
// tells the budget when done. Owned by the Group; it ends at Close.
func (g *Group) trimLoop(kick, budgetKick <-chan struct{}) {
	defer g.wg.Done()
	t := g.spec.Timing
	for {
		keep, byBudget := t.TrailingBytes, false
		select {
		case <-g.stop:
			return
		case <-kick:
		case <-budgetKick:
			keep, byBudget = min(keep, g.logs.bytes()/4), true
		}
		ok := g.trim(min(g.logs.trailing(keep), t.TrailingLogs))
		if byBudget {
			g.logs.budget.trimmed(g.logs)
		}
		if !ok {
			return
		}
	}
}

// trim sets raft's TrailingLogs to n and takes a snapshot, after which
// raft deletes the older entries. It reports false if the group closed
// meanwhile.
func (g *Group) trim(n uint64) bool {
	if err := g.setTrailingLogs(n); err != nil {
		g.log.Warn("could not bound the entries kept after a snapshot", "err", err)
		return true
	}
	f := g.raft.Snapshot()
	done := make(chan error, 1)
	go func() { done <- f.Error() }() // ends when raft answers, which it does at shutdown too
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			g.log.Warn("snapshot to trim the raft log failed", "err", err, "log_bytes", g.logs.bytes())
		}
		return true
	case <-g.stop:
		return false
	}
}

// keepFrom is, on a leader, the oldest entry its furthest-behind
// follower that has matched anything in this term still needs (the one
// it matched last, whose term raft sends along with the next), if the
// entries from there on hold at most TrailingBytes + SnapshotBytes; 0
// otherwise (and while the group starts). The log's head is never deleted
// past it (sizedLog.keep).
func (g *Group) keepFrom() uint64 {
	if !g.started.Load() {
		return 0 // a follower installing a snapshot as raft starts
	}
	r := g.Replication()
	var from uint64
	for _, f := range r.Followers {
		if f.Match > 0 && f.Match < r.LastIndex && (from == 0 || f.Match < from) {
			from = f.Match
		}
	}
	if from == 0 || g.logs.bytesFrom(from) > g.logs.limit {
		return 0
	}
	return from
}

// setTrailingLogs sets raft's TrailingLogs, keeping the other reloadable
// settings as they are.
func (g *Group) setTrailingLogs(n uint64) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	rc := g.raft.ReloadableConfig()
	if rc.TrailingLogs == n {
		return nil
	}
	rc.TrailingLogs = n
	return g.raft.ReloadConfig(rc)
}

// reloadTimeouts applies rc's timeouts and snapshot settings but keeps
// the TrailingLogs the trimmer set.
func (g *Group) reloadTimeouts(rc raft.ReloadableConfig) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	rc.TrailingLogs = g.raft.ReloadableConfig().TrailingLogs
	return g.raft.ReloadConfig(rc)
}

// IsMonotonic passes on the store's raft.MonotonicLogStore (raft-wal is
// one: raft must reset it after installing a snapshot).
func (s *sizedLog) IsMonotonic() bool { return isMonotonic(s.LogStore) }

func isMonotonic(s raft.LogStore) bool {
	m, ok := s.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
