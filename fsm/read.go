package fsm

import (
	"github.com/minikafka/minikafka-go/producerstate"
)

// The read side: what the FSM goroutine publishes after applying, and
// what readers on other goroutines load.

// publish makes the applied state visible to readers, in the order the
// comment at FSM.lso gives.
func (f *FSM) publish() {
	f.publishAborted()
	f.publishOffsets()
}

func (f *FSM) publishAborted() {
	aborted := f.table.AbortedTxns()
	f.aborted.Store(&aborted)
	f.txnDirty = false
}

// publishOffsets stores the last stable offset, then the high watermark.
func (f *FSM) publishOffsets() {
	end, start := f.log.EndOffset(), f.log.StartOffset()
	lso := end
	if first, ok := f.table.FirstUnstableOffset(); ok {
		lso = min(first, end)
	}
	f.lso.Store(max(lso, start))
	f.hw.Store(end)
}

// LastStableOffset is the offset below which every transaction has ended:
// the first offset of the oldest open transaction, or the high watermark
// when none is open (never below the log start). A read_committed consumer
// reads up to it.
func (f *FSM) LastStableOffset() int64 { return f.lso.Load() }

// AbortedTxns returns the aborted transactions that overlap the offsets
// [from, to), oldest marker first, for a read_committed Fetch. Load
// LastStableOffset first: the index then covers every abort below it.
func (f *FSM) AbortedTxns(from, to int64) []producerstate.AbortedTxn {
	p := f.aborted.Load()
	if p == nil {
		return nil
	}
	return producerstate.AbortedIn(*p, from, to)
}

// HighWatermark is the offset after the last applied batch: every offset
// below it is committed.
func (f *FSM) HighWatermark() int64 { return f.hw.Load() }

// LogStartOffset is the log's first offset.
func (f *FSM) LogStartOffset() int64 { return f.log.StartOffset() }

// AppliedIndex is the last Raft index the FSM applied.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// Changed returns a channel that is closed the next time the high
// watermark moves (or the FSM is restored or closed). Get a new one after
// it fires.
func (f *FSM) Changed() <-chan struct{} { return f.changed.C() }

// WatchChanged calls wake once, when the channel seen (from Changed) is
// closed, or at once if it already is; wake must not block. stop cancels
// it (changes.Signal.Watch).
func (f *FSM) WatchChanged(seen <-chan struct{}, wake func()) (stop func()) {
	return f.changed.Watch(seen, wake)
}

func (f *FSM) notify() { f.changed.Fire() }
