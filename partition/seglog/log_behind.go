package seglog

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka-go/record"
)

// Write-behind (Options.WriteBehindBytes). At many partitions each Raft
// entry, and so each append, is small, and the kernel's cost per byte of a
// write falls with the write's size (larger page-cache folios, fewer
// calls): gathering appends into one pwritev makes the same bytes cheaper
// (docs/performance.md). The batches waiting are already durable in the
// Raft log, and readers never see them before they are on file: every read
// method writes them out first (settle), as do Sync and the writer's other
// methods, so a crash or a failed write loses nothing a snapshot covers.
// What waits is bounded by WriteBehindBytes, maxWaiting batches and
// WriteBehindDelay (the flusher writes out the rest).

// writeBehind is the batches appended but not yet written; guarded by wmu
// but for waiting.
type writeBehind struct {
	bufs    [][]byte  // each batch's head and the rest of its bytes, in order
	batches []waiting // their headers, for publish
	heads   []byte    // the rewritten heads bufs points into; never grown past its capacity
	bytes   int64
	waiting atomic.Int64 // bytes, read without wmu by settle
}

// waiting is one batch of a writeBehind.
type waiting struct {
	h record.Header
	n int64
}

// maxWaiting bounds the batches written at once: two buffers each, within
// the kernel's IOV_MAX of 1024.
const maxWaiting = 256

// stash adds the batch head+rest (h, n bytes) to those waiting and writes
// them all out once they reach the bounds. An AppendAt's head is the
// Log's scratch and is copied; rest, and an Append's whole batch, are the
// caller's, unchanged until written. On a failed write the batch is
// taken back and the error returned, as a direct write would. The caller
// holds wmu.
func (l *Log) stash(head, rest []byte, h record.Header, n int64) error {
	b := &l.behind
	if b.heads == nil {
		b.heads = make([]byte, 0, maxWaiting*rewrittenHead)
	}
	at := len(b.heads)
	if len(head) == rewrittenHead {
		b.heads = append(b.heads, head...)
		head = b.heads[at:]
	}
	first := b.bytes == 0
	b.bufs = append(b.bufs, head, rest)
	b.batches = append(b.batches, waiting{h, n})
	b.bytes += n
	b.waiting.Store(b.bytes)
	l.setWriterEnd(h.NextOffset(), b.bytes)
	if b.bytes >= l.opts.WriteBehindBytes || len(b.batches) >= maxWaiting {
		if err := l.writeOutLocked(); err != nil {
			b.bufs[len(b.bufs)-2], b.bufs[len(b.bufs)-1] = nil, nil
			b.bufs, b.batches, b.heads = b.bufs[:len(b.bufs)-2], b.batches[:len(b.batches)-1], b.heads[:at]
			b.bytes -= n
			b.waiting.Store(b.bytes)
			l.setWriterEnd(h.BaseOffset, b.bytes)
			return err
		}
	} else if first {
		select {
		case l.behindKick <- struct{}{}:
		default: // the flusher has one to take already
		}
	}
	l.noteUnsynced(n)
	return nil
}

// setWriterEnd sets EndOffset and the bytes waiting. The caller holds wmu.
func (l *Log) setWriterEnd(end, waiting int64) {
	l.mu.Lock()
	l.wend, l.wbytes = end, waiting
	l.mu.Unlock()
}

// writeOutLocked writes the batches waiting in one call and publishes
// them. The caller holds wmu.
func (l *Log) writeOutLocked() error {
	b := &l.behind
	if b.bytes == 0 {
		return nil
	}
	if err := l.writerErr(); err != nil {
		return err
	}
	s := l.segs[len(l.segs)-1]
	if err := l.writeLocked(s, b.bufs); err != nil {
		return err
	}
	b.bytes = 0 // publish's count of what still waits
	l.publish(s, b.batches)
	l.dropWaiting()
	return nil
}

// dropWaiting forgets the batches waiting (written, or the log is reset
// or discarded). The caller holds wmu.
func (l *Log) dropWaiting() {
	b := &l.behind
	clear(b.bufs) // the callers' bytes need not outlive the write
	b.bufs, b.batches, b.heads = b.bufs[:0], b.batches[:0], b.heads[:0]
	b.bytes = 0
	b.waiting.Store(0)
}

// settle writes out the batches waiting, if any, so that a reader finds
// on file every batch below an EndOffset it read before calling.
func (l *Log) settle() error {
	if l.behind.waiting.Load() == 0 {
		return nil
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.writeOutLocked()
}

// writeOutDue is the flusher writing out batches that waited
// WriteBehindDelay.
func (l *Log) writeOutDue() {
	if err := l.settle(); err != nil && !errors.Is(err, ErrClosed) {
		l.logger.Warn("writing out appended batches failed", "err", err)
	}
}

// behindTimer arms the flusher's write-out timer for a run of batches that
// began waiting, unless one is armed (due non-nil).
func (l *Log) behindTimer(t *time.Timer, due <-chan time.Time) (*time.Timer, <-chan time.Time) {
	if due != nil {
		return t, due
	}
	if t == nil {
		t = time.NewTimer(l.opts.WriteBehindDelay)
	} else {
		t.Reset(l.opts.WriteBehindDelay)
	}
	return t, t.C
}
