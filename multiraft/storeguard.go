package multiraft

import (
	"bytes"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// guardedStore is a group's log store as raft sees it: a failed write is
// a storage error of the group (StorageErr), never an exit.
//
// Raft handles a failed StoreLogs (a leader steps down, a follower
// refuses the entries), but panics when it cannot store its term. So once
// raft runs, a failed stable write is retried, with a backoff, until it
// succeeds (the disk has room again): the group's raft waits meanwhile,
// and other replicas lead. When the group closes first, the goroutine
// that waits ends there (runtime.Goexit) without returning to raft; raft
// counts its goroutines with deferred calls, so its shutdown completes.
type guardedStore struct {
	logStore
	stop <-chan struct{} // the group's: closed at Close
	log  *slog.Logger

	mu       sync.Mutex // guards running, failed and failedAt
	running  bool       // raft runs: stable writes are retried
	failed   error      // the last write's error, nil after a success
	failedAt time.Time
}

// storageErrHold is how long a failed write of a store that cannot tell
// when it recovers (boltdb, wal) refuses the group's proposals; then one
// goes through to try the disk again.
const storageErrHold = time.Second

// stableRetryMax bounds the wait between two tries of a stable write.
const stableRetryMax = time.Second

func (s *guardedStore) note(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed, s.failedAt = err, time.Now()
	} else {
		s.failed = nil
	}
}

// StorageErr is the store's failure, if it refuses writes now.
func (s *guardedStore) StorageErr() error {
	if f, ok := s.logStore.(interface{ Failure() error }); ok {
		if err := f.Failure(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil && time.Since(s.failedAt) < storageErrHold {
		return s.failed
	}
	return nil
}

func (s *guardedStore) setRunning() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = true
}

func (s *guardedStore) StoreLogs(logs []*raft.Log) error {
	err := s.logStore.StoreLogs(logs)
	s.note(err)
	return err
}

func (s *guardedStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *guardedStore) DeleteRange(lo, hi uint64) error {
	err := s.logStore.DeleteRange(lo, hi)
	s.note(err)
	return err
}

// Set and SetUint64 skip a write of the value already stored: raft
// writes its unchanged term at every start, which a full disk must not
// stop.
func (s *guardedStore) Set(k, v []byte) error {
	if old, err := s.logStore.Get(k); err == nil && bytes.Equal(old, v) {
		return nil
	}
	return s.stable(func() error { return s.logStore.Set(k, v) })
}

func (s *guardedStore) SetUint64(k []byte, v uint64) error {
	if old, err := s.logStore.GetUint64(k); err == nil && old == v && v != 0 {
		return nil
	}
	return s.stable(func() error { return s.logStore.SetUint64(k, v) })
}

// stable runs a stable write; once raft runs, until it succeeds.
func (s *guardedStore) stable(write func() error) error {
	err := write()
	s.note(err)
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if err == nil || !running {
		return err
	}
	s.log.Error("cannot store raft's term or vote; the group waits until the disk has room", "err", err)
	for wait := time.Millisecond; ; wait = min(2*wait, stableRetryMax) {
		select {
		case <-s.stop:
			s.log.Warn("group closed while waiting to store raft's term or vote", "err", err)
			runtime.Goexit() // not back to raft, which would panic
		case <-time.After(wait):
		}
		if err = write(); err == nil {
			s.note(nil)
			s.log.Info("stored raft's term or vote after the disk had room again")
			return nil
		}
		s.note(err)
	}
}

// StorageErr is why the group's log store refuses writes now (its disk is
// full, or it failed), or nil: proposals would fail, so callers refuse
// them first with a storage error of their own.
func (g *Group) StorageErr() error { return g.guard.StorageErr() }

// IsMonotonic passes on the store's raft.MonotonicLogStore.
func (s *guardedStore) IsMonotonic() bool { return isMonotonic(s.logStore) }
