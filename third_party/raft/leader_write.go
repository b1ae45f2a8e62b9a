package raft

import (
	"errors"
	"sync"
)

// Parallel leader writes (Config.ParallelLeaderWrite; a MiniKafka patch).
//
// Upstream, a leader stores new entries in its own log (an fsync) before
// it tells the replicators about them, so a commit waits for two fsyncs in
// series: the leader's, then a follower's. With this patch the leader
// loop hands the entries to the replicators and to a writer goroutine at
// once (Raft thesis §10.2.1), and the two fsyncs overlap.
//
// Safety rests on three rules:
//   - The leader counts itself toward the commit of an entry only once its
//     own StoreLogs of that entry has returned: the writer, not
//     dispatchLogs, calls commitment.match for the local server. An entry
//     is therefore committed only when a majority holds it durably, as
//     upstream; the leader's own copy may simply arrive after the
//     followers' copies.
//   - Until stored, the entries stay readable through pendingLog, so the
//     replicators send them; the store sees writes in index order, from
//     one goroutine.
//   - Nothing else writes the log while the writer may: leaving the
//     leader state, accepting an AppendEntries or InstallSnapshot of a
//     newer leader, and restoring a user snapshot all first settle the
//     writer (wait until it has stored or failed everything handed to
//     it). When a write failed, the leader steps down and its last log
//     index is read back from the store, so it never claims entries it
//     does not hold. A snapshot's compaction stops at the store's last
//     index: the leader may have applied entries it has not stored yet.
//
// A leader may apply an entry to its FSM before its own log holds it (the
// followers' copies committed it); the entry is committed all the same,
// and a restart or a new leader sends it again, below the applied index.

// errLeaderWriteStopped answers a dispatch after the writer stopped.
var errLeaderWriteStopped = errors.New("raft: leader log writer stopped")

// pendingLog is the leader's log store as the rest of raft sees it with
// ParallelLeaderWrite: the store, plus the dispatched entries the writer
// has not stored yet.
type pendingLog struct {
	LogStore

	mu      sync.Mutex // guards every field below
	pending []*Log     // dispatched, not yet stored, in index order
	err     error      // the first failed StoreLogs of this leadership term
	closed  bool       // settled: no more dispatches this term
	running bool       // a writer goroutine runs; it returns when nothing is pending
	idle    sync.Cond  // on mu: signalled when running turns false
}

// GetLog returns a pending entry, or asks the store.
func (p *pendingLog) GetLog(index uint64, log *Log) error {
	p.mu.Lock()
	if n := len(p.pending); n > 0 {
		first := p.pending[0].Index
		if index >= first && index < first+uint64(n) {
			*log = *p.pending[index-first]
			p.mu.Unlock()
			return nil
		}
	}
	p.mu.Unlock()
	return p.LogStore.GetLog(index, log)
}

// monotonicPendingLog is the pendingLog of a MonotonicLogStore, which
// passes the store's answer on; other stores' pendingLog is not one, as
// the store is not.
type monotonicPendingLog struct{ *pendingLog }

func (p monotonicPendingLog) IsMonotonic() bool {
	return p.LogStore.(MonotonicLogStore).IsMonotonic()
}

// newPendingLog wraps a leader's log store for ParallelLeaderWrite.
func newPendingLog(store LogStore) LogStore {
	p := &pendingLog{LogStore: store}
	if _, ok := store.(MonotonicLogStore); ok {
		return monotonicPendingLog{p}
	}
	return p
}

// pendingOf returns r.logs as a pendingLog, if it is one.
func pendingOf(logs LogStore) (*pendingLog, bool) {
	switch p := logs.(type) {
	case *pendingLog:
		return p, true
	case monotonicPendingLog:
		return p.pendingLog, true
	}
	return nil, false
}

// leaderWriter is one leadership term's writer: while entries are
// pending, a goroutine stores them and then counts the leader's match.
// settleLeaderWrites waits for it; no goroutine runs while idle.
type leaderWriter struct {
	log      *pendingLog
	match    func(index uint64) // the term's commitment.match for the local server
	stepDown chan struct{}      // the term's leaderState.stepDown
	logger   interface{ Error(string, ...interface{}) }
}

// startLeaderWriter sets up the writer of this leadership term.
func (r *Raft) startLeaderWriter() {
	p, _ := pendingOf(r.logs)
	p.mu.Lock()
	p.pending, p.err, p.closed = nil, nil, false
	p.idle.L = &p.mu
	p.mu.Unlock()
	commitment, localID := r.leaderState.commitment, r.localID
	r.leaderState.writer = &leaderWriter{log: p, stepDown: r.leaderState.stepDown, logger: r.logger,
		match: func(index uint64) { commitment.match(localID, index) }}
}

// dispatch hands entries, numbered after every entry handed before, to
// the writer. It does not wait for the store.
func (w *leaderWriter) dispatch(logs []*Log) error {
	p := w.log
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.err != nil {
		return errLeaderWriteStopped
	}
	p.pending = append(p.pending, logs...)
	if !p.running {
		p.running = true
		go w.run()
	}
	return nil
}

// run stores the pending entries, all those dispatched meanwhile in one
// StoreLogs, until none is left or a write fails.
func (w *leaderWriter) run() {
	p := w.log
	p.mu.Lock()
	for len(p.pending) > 0 && p.err == nil {
		batch := p.pending[:len(p.pending):len(p.pending)]
		p.mu.Unlock()
		err := p.LogStore.StoreLogs(batch)
		last := batch[len(batch)-1].Index
		if err != nil {
			w.logger.Error("failed to store logs", "last-index", last, "error", err)
			select {
			case w.stepDown <- struct{}{}:
			default:
			}
		} else {
			w.match(last)
		}
		p.mu.Lock()
		if err != nil {
			p.err = err
		} else {
			p.pending = append([]*Log(nil), p.pending[len(batch):]...)
		}
	}
	p.running = false
	p.idle.Broadcast()
	p.mu.Unlock()
}

// settleLeaderWrites ends the leadership term's writes, if it has a
// writer: it waits until everything handed to the writer is stored or a
// write failed. After a failure the pending entries are dropped and the
// last log index is read back from the store. It returns the failure, if
// any. Called from the main loop.
func (r *Raft) settleLeaderWrites() error {
	w := r.leaderState.writer
	if w == nil {
		return nil
	}
	r.leaderState.writer = nil
	p := w.log
	p.mu.Lock()
	p.closed = true
	for p.running {
		p.idle.Wait()
	}
	err := p.err
	p.pending = nil
	p.mu.Unlock()
	if err != nil {
		r.readBackLastLog()
	}
	return err
}

// readBackLastLog sets the last log index and term from the store, after
// a failed leader write left them ahead of it.
func (r *Raft) readBackLastLog() {
	var index, term uint64
	if last, err := r.logs.LastIndex(); err == nil && last > 0 {
		var entry Log
		if err := r.logs.GetLog(last, &entry); err == nil {
			index, term = last, entry.Term
		} else {
			r.logger.Error("failed to read the last log back", "index", last, "error", err)
		}
	}
	r.setLastLog(index, term)
}

// dispatchParallel is dispatchLogs' end with ParallelLeaderWrite: the
// entries, already numbered and inflight, go to the writer and to the
// replicators at once. The leader's match follows its own store.
func (r *Raft) dispatchParallel(applyLogs []*logFuture, logs []*Log, lastIndex, term uint64) {
	if r.leaderState.writer == nil {
		r.startLeaderWriter()
	}
	if err := r.leaderState.writer.dispatch(logs); err != nil {
		// An earlier write failed: the step-down it asked for is on its way.
		for _, applyLog := range applyLogs {
			applyLog.respond(err)
		}
		r.setState(Follower)
		return
	}
	r.setLastLog(lastIndex, term)
	for _, f := range r.leaderState.replState {
		asyncNotifyCh(f.triggerCh)
		f.wake() // something new: quiesce.go
	}
}
