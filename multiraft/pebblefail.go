package multiraft

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// A failed write of the node-wide Pebble log store must not end the
// process (a full disk does not fail its writes: see spaceFS). Pebble treats a failed commit as fatal:
// it calls Logger.Fatalf, which must not return, and leaves the commit
// pipeline unusable. So every call into the DB runs under guarded, and
// pebbleLogger.Fatalf panics there with a pebbleFatal that guarded turns
// into an error; the store is then failed (ErrLogStoreFailed): writes are
// refused at once, reads go on from what the DB holds, the groups on it
// step down or refuse proposals, and the node keeps serving everything
// else. A Fatalf on one of Pebble's own goroutines (a flush or compaction
// that could not write its MANIFEST) cannot be turned into an error: that
// goroutine stops for good and the store is failed alike. Either way the
// store stays failed until the node restarts and Pebble recovers from its
// WAL.
//
// Writes run on a goroutine of their own and the caller also waits for
// the failure: a commit queued behind a failed one never returns from
// Pebble, and must not hold a raft goroutine.

// ErrLogStoreFailed is wrapped by every error of a failed node-wide log
// store's writes.
var ErrLogStoreFailed = errors.New("multiraft: raft log store failed; restart the node once the disk has room")

// ErrLogStoreFull is wrapped by the errors of the node-wide log store's
// writes while its disk is full (spaceFS): they are refused until it has
// room again.
var ErrLogStoreFull = errors.New("multiraft: raft log store's disk is full; writes wait for space")

// pebbleFatal is what Fatalf panics with under guarded.
type pebbleFatal struct{ msg string }

// health is the store's state: failed for good, or full for now. Its
// mutex guards every field.
type health struct {
	mu       sync.Mutex
	failed   error         // wraps ErrLogStoreFailed; set once
	failedCh chan struct{} // closed when failed is set
	full     error         // wraps ErrLogStoreFull while a write waits for space
	fullCh   chan struct{} // closed when full is set; replaced when it clears
	closing  chan struct{} // closed when the store closes: writes stop waiting
	log      *slog.Logger
}

func newHealth(log *slog.Logger) *health {
	return &health{failedCh: make(chan struct{}), fullCh: make(chan struct{}), closing: make(chan struct{}), log: log}
}

// set records the first failure and returns the store's error.
func (h *health) set(cause error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed == nil {
		h.failed = fmt.Errorf("%w: %w", ErrLogStoreFailed, cause)
		close(h.failedCh)
	}
	return h.failed
}

// err is why writes are refused now, or nil.
func (h *health) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed != nil {
		return h.failed
	}
	return h.full
}

// waitFull marks the store full because of cause and waits for d, or
// until the store closes (false).
func (h *health) waitFull(cause error, d time.Duration) bool {
	h.mu.Lock()
	if h.full == nil {
		h.full = fmt.Errorf("%w: %w", ErrLogStoreFull, cause)
		close(h.fullCh)
		h.log.Error("raft log store's disk is full: its groups refuse writes until it has room", "err", cause)
	}
	h.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.closing:
		return false
	}
}

// clearFull ends a full state once a write got through.
func (h *health) clearFull() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.full != nil {
		h.full, h.fullCh = nil, make(chan struct{})
		h.log.Info("raft log store's disk has room again: its groups take writes")
	}
}

// channels are what a write waits on besides itself.
func (h *health) channels() (failed, full <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failedCh, h.fullCh
}

// guarded runs fn, turning a panic in it (Pebble's Fatalf, or an I/O
// error Pebble panics with) into a failure of the store.
func guarded(h *health, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			cause := fmt.Errorf("%v", r)
			if pf, ok := r.(pebbleFatal); ok {
				cause = errors.New(pf.msg)
			} else {
				h.log.Error("raft log store panicked", "panic", r, "stack", string(debug.Stack()))
			}
			err = h.set(cause)
		}
	}()
	return fn()
}

// write runs fn, a write to the DB, on a goroutine of its own under
// guarded, and returns its error; or, as soon as the store fails or its
// disk is full, that (fn then goes on, or never returns: it must own
// what it uses). A full or failed store refuses writes at once.
func (pl *pebbleLog) write(fn func() error) error {
	if err := pl.health.err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- guarded(pl.health, fn) }()
	for {
		failed, full := pl.health.channels()
		select {
		case err := <-done:
			return err
		case <-failed:
		case <-full:
		}
		select {
		case err := <-done: // it finished all the same
			return err
		default:
		}
		if err := pl.health.err(); err != nil {
			return err
		}
		// The disk had room again before this write was told: wait anew.
	}
}

// read runs fn, a read of the DB, under guarded: reads go on while the
// store is full or failed, from what it holds.
func (pl *pebbleLog) read(fn func() error) error { return guarded(pl.health, fn) }

// Failure is why the store refuses writes now (it failed, or its disk is
// full), or nil.
func (pl *pebbleLog) Failure() error { return pl.health.err() }

// underGuard reports whether the calling goroutine runs inside guarded.
func underGuard() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "/multiraft.guarded") {
			return true
		}
		if !more {
			return false
		}
	}
}

// pebbleLogger passes Pebble's messages to slog: info at Debug (flushes
// and compactions are routine), errors at Error. Its Fatalf fails the
// store (failed) instead of ending the process.
type pebbleLogger struct {
	l *slog.Logger
	h *health
}

func (p pebbleLogger) Infof(format string, args ...any) { p.l.Debug(fmt.Sprintf(format, args...)) }
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...))
}

// Fatalf is Pebble's report of an error it cannot recover from; it
// expects Fatalf not to return. Under guarded it panics, for guarded to
// recover; on Pebble's own goroutines it fails the store and stops the
// goroutine for good.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: " + strings.TrimPrefix(fmt.Sprintf(format, args...), "pebble: ")
	p.l.Error(msg)
	if underGuard() {
		panic(pebbleFatal{msg})
	}
	p.h.set(errors.New(msg))
	p.l.Error("the raft log store failed on one of its own goroutines; its groups refuse writes until the node restarts")
	select {} // Pebble expects no return; the DB this goroutine served is abandoned
}
