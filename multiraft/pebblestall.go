package multiraft

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// WriteStalls is what the node-wide log store's write stalls cost so far:
// Pebble holds every group's StoreLogs while its memtables or level 0 are
// full, so no partition on the node commits meanwhile.
type WriteStalls struct {
	Count uint64        // stalls begun
	Time  time.Duration // stalled time, of ended stalls
}

// stallWatch counts and logs Pebble's write stalls and slow disk
// operations. Pebble calls it from its own goroutines.
type stallWatch struct {
	log *slog.Logger

	mu     sync.Mutex // guards since and reason: Pebble's begin and end may run on different goroutines
	since  time.Time  // when the current stall began; zero when none
	reason string

	count atomic.Uint64
	nanos atomic.Int64
}

func (w *stallWatch) begin(i pebble.WriteStallBeginInfo) {
	w.count.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.since, w.reason = time.Now(), i.Reason
}

func (w *stallWatch) end() {
	w.mu.Lock()
	since, reason := w.since, w.reason
	w.since = time.Time{}
	w.mu.Unlock()
	if since.IsZero() {
		return
	}
	took := time.Since(since)
	w.nanos.Add(int64(took))
	w.log.Warn("raft log store stalled writes", "reason", reason, "took", took)
}

func (w *stallWatch) diskSlow(i pebble.DiskSlowInfo) {
	w.log.Warn("raft log store disk slow", "path", i.Path, "op", i.OpType.String(), "bytes", i.WriteSize, "so_far", i.Duration)
}

// listener is the EventListener that feeds the watch.
func (w *stallWatch) listener() *pebble.EventListener {
	return &pebble.EventListener{WriteStallBegin: w.begin, WriteStallEnd: w.end, DiskSlow: w.diskSlow}
}

func (w *stallWatch) stalls() WriteStalls {
	return WriteStalls{Count: w.count.Load(), Time: time.Duration(w.nanos.Load())}
}
