package jepsen

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka-go/test/jepsen/history"
)

// Recorder keeps a history: every operation, with times on one monotonic
// clock (nanoseconds since the Recorder was made). Safe for concurrent use.
type Recorder struct {
	start  time.Time
	procs  atomic.Int64 // the last process number handed out
	values atomic.Int64 // the last value handed out

	mu  sync.Mutex // guards ops
	ops []history.Op
}

// NewRecorder starts a history.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now is the history's clock.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// NewProcess returns a process number not used before.
func (r *Recorder) NewProcess() int { return int(r.procs.Add(1)) }

// NextValue returns a value not written before: values identify writes.
func (r *Recorder) NextValue() int64 { return r.values.Add(1) }

// Add records a completed operation.
func (r *Recorder) Add(op history.Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns a copy of the history so far.
func (r *Recorder) Ops() []history.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}
