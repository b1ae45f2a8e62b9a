package raftmux

import (
	"encoding/binary"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// countFSM applies the values 1, 2, 3, ... in order: it counts them and
// sums them. A value at or below the highest one applied is a client retry
// after an ambiguous Apply error, and is ignored, so retries are safe.
type countFSM struct {
	mu   sync.Mutex // guards st
	st   countState
	gaps int // values that skipped ahead; must stay 0
}

type countState struct{ n, sum, high uint64 }

func (f *countFSM) Apply(l *raft.Log) any {
	v := binary.BigEndian.Uint64(l.Data)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case v <= f.st.high: // duplicate of a retried command
	case v == f.st.high+1:
		f.st = countState{n: f.st.n + 1, sum: f.st.sum + v, high: v}
	default:
		f.gaps++
	}
	return nil
}

func (f *countFSM) state() (countState, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, f.gaps
}

func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) {
	st, _ := f.state()
	return countSnapshot(st), nil
}

func (f *countFSM) Restore(rc io.ReadCloser) error {
	defer func() { _ = rc.Close() }()
	var b [24]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = countState{
		n:    binary.BigEndian.Uint64(b[0:]),
		sum:  binary.BigEndian.Uint64(b[8:]),
		high: binary.BigEndian.Uint64(b[16:]),
	}
	return nil
}

type countSnapshot countState

func (s countSnapshot) Persist(sink raft.SnapshotSink) error {
	b := binary.BigEndian.AppendUint64(nil, s.n)
	b = binary.BigEndian.AppendUint64(b, s.sum)
	b = binary.BigEndian.AppendUint64(b, s.high)
	if _, err := sink.Write(b); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (countSnapshot) Release() {}
