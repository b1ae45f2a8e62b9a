package metadata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/hashicorp/raft"
)

// FSM is the metadata group's raft.FSM. Raft calls Apply, Snapshot and
// Restore from its FSM goroutine; any goroutine may call State, Watch and
// WaitFor.
type FSM struct {
	log *slog.Logger

	mu sync.RWMutex // guards state and changed, which are replaced together
	// state is the current immutable Snapshot; Apply and Restore swap it.
	state *Snapshot
	// changed is closed, and replaced, whenever state is swapped.
	changed chan struct{}
}

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.FSMSnapshot = fsmSnapshot{}
)

// Option configures NewFSM.
type Option interface{ apply(*FSM) }

type optionFunc func(*FSM)

func (o optionFunc) apply(f *FSM) { o(f) }

// WithLogger sets where the FSM logs: undecodable entries at WARN, rejected
// commands at DEBUG. Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return optionFunc(func(f *FSM) { f.log = l }) }

// NewFSM returns an FSM holding the empty state (AppliedIndex 0, not
// initialized).
func NewFSM(opts ...Option) *FSM {
	f := &FSM{log: slog.Default(), state: &Snapshot{}, changed: make(chan struct{})}
	for _, o := range opts {
		o.apply(f)
	}
	return f
}

// State returns the current state. It is immutable and may be kept.
func (f *FSM) State() *Snapshot {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state
}

// Watch returns a channel that is closed at the next state change: every
// applied entry (the applied index moves even when a command is rejected)
// and every Restore. Take the channel before reading State, then wait on it,
// so no change falls between the two; or use WaitFor.
func (f *FSM) Watch() <-chan struct{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.changed
}

// WaitFor blocks until cond holds for the current state and returns that
// state, or returns ctx's error. cond is called without locks held, once per
// change; it must not block.
func (f *FSM) WaitFor(ctx context.Context, cond func(*Snapshot) bool) (*Snapshot, error) {
	for {
		f.mu.RLock()
		s, changed := f.state, f.changed
		f.mu.RUnlock()
		if cond(s) {
			return s, nil
		}
		select {
		case <-changed: // the state moved on: look again
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// publish swaps in a new state and wakes every watcher.
func (f *FSM) publish(s *Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = s
	close(f.changed)
	f.changed = make(chan struct{})
}

// Apply implements raft.FSM. It decodes the entry and applies it at the
// entry's index. It returns the command's result value (see each command)
// or an error value: from Decode for undecodable data, else from
// Snapshot.Apply. Entries other than commands only move the applied index.
func (f *FSM) Apply(l *raft.Log) any {
	cur := f.State() // only this goroutine swaps state, so cur stays current
	if l.Type != raft.LogCommand {
		next := cur.shallow()
		next.index = l.Index
		f.publish(next)
		return nil
	}
	cmd, err := Decode(l.Data)
	if err != nil {
		// Every replica rejects the same bytes the same way, so state does
		// not diverge; but it means a proposer wrote something this build
		// cannot read.
		f.log.Warn("metadata: undecodable log entry", "index", l.Index, "err", err)
		next := cur.shallow()
		next.index = l.Index
		f.publish(next)
		return err
	}
	next, result, err := cur.Apply(l.Index, cmd)
	f.publish(next)
	if err != nil {
		f.log.Debug("metadata: command rejected", "index", l.Index, "command", cmd.Type(), "err", err)
		return err
	}
	return result
}

// Snapshot implements raft.FSM. It captures the current immutable state;
// the encoding happens in Persist, concurrently with later Applies.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return fsmSnapshot{state: f.State()}, nil
}

// Restore implements raft.FSM: it replaces the whole state with the one
// encoded in rc (see DecodeSnapshot) and wakes watchers. On error the state
// is unchanged.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("metadata: read snapshot: %w", err)
	}
	s, err := DecodeSnapshot(data)
	if err != nil {
		return err
	}
	f.publish(s)
	return nil
}

type fsmSnapshot struct{ state *Snapshot }

// Persist writes the encoded state to the sink and closes it, or cancels it
// on error.
func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	b, err := s.state.MarshalBinary()
	if err == nil {
		_, err = sink.Write(b)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("metadata: persist snapshot: %w", err), sink.Cancel())
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot; there is nothing to free.
func (fsmSnapshot) Release() {}
