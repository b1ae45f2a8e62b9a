package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"os"
	"path/filepath"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/record"
)

// streamChunk is what SealedBatches reads at a time and what a
// Replacement buffers before it writes: a cleaning's memory, whatever
// the segments' size.
const streamChunk = 1 << 20

// SealedBatches walks the batches of the sealed segments that start at
// bases, in turn, reading streamChunk bytes at a time (more for a larger
// batch) into one buffer. Each batch is valid until the next step. A
// segment that is no longer sealed at its base yields a *BoundaryError;
// a closed log ErrClosed.
func (l *Log) SealedBatches(bases ...int64) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		var buf []byte
		for _, base := range bases {
			s, size, err := l.sealed(base)
			if err != nil {
				yield(nil, err)
				return
			}
			for off, lo, hi := int64(0), 0, 0; off < size || lo < hi; {
				n := batchLen(buf[lo:hi])
				if hi-lo < record.LogOverhead || hi-lo < n {
					if left := int64(hi-lo) + size - off; left < int64(max(n, record.LogOverhead)) {
						// A batch cut by the segment's end: the data's fault.
						yield(nil, &record.LengthError{Length: int32(max(n-record.LogOverhead, 0)), Have: int(left) - record.LogOverhead})
						return
					}
					if buf, lo, hi, err = l.readMore(s, size, buf, lo, hi, &off, max(streamChunk, n)); err != nil {
						yield(nil, err)
						return
					}
					continue
				}
				if !yield(buf[lo:lo+n], nil) {
					return
				}
				lo += n
			}
		}
	}
}

// batchLen is the size of the batch b starts with, or 0 before its length
// field.
func batchLen(b []byte) int {
	if len(b) < record.LogOverhead {
		return 0
	}
	return int(binary.BigEndian.Uint32(b[8:12])) + record.LogOverhead
}

// sealed finds the sealed segment that starts at base, and its size.
func (l *Log) sealed(base int64) (*segment, int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, 0, ErrClosed
	}
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.base == base {
			return s, s.size, nil
		}
	}
	return nil, 0, &BoundaryError{Offset: base}
}

// readMore moves buf[lo:hi] to the front and reads bytes of s (of size
// bytes) from *off after it, up to need in all, under truncMu as every
// reader.
func (l *Log) readMore(s *segment, size int64, buf []byte, lo, hi int, off *int64, need int) ([]byte, int, int, error) {
	if cap(buf) < need {
		buf = append(make([]byte, 0, need), buf[lo:hi]...)
	} else {
		buf = append(buf[:0], buf[lo:hi]...)
	}
	n := len(buf)
	want := int(min(int64(need-n), size-*off)) // > 0: SealedBatches checked
	buf = buf[:n+want]
	l.truncMu.RLock()
	defer l.truncMu.RUnlock()
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return nil, 0, 0, ErrClosed
	}
	if _, err := s.f.ReadAt(buf[n:], *off); err != nil {
		return nil, 0, 0, fmt.Errorf("partition: read segment: %w", err)
	}
	*off += int64(want)
	return buf, 0, n + want, nil
}

// Replacement is the cleaned form of the sealed segments of [base, next),
// written as it is made: Add appends whole batches, Commit swaps them in
// for the segments, Abort drops them. Its memory is one buffer whatever
// the segments' size, and appends do not wait while it is written. It
// writes one part while the bytes fit a segment (the log's SegmentBytes,
// and offsets within math.MaxUint32 of the part's base, as appends roll),
// and a part more for each segment's worth beyond (swapset.go).
type Replacement struct {
	l          *Log
	base, next int64
	limit      int64 // a part's bytes
	parts      []replacementPart
	buf        []byte
	at         int64 // the offset the next batch must start at
	err        error // sticky
	done       bool  // committed or aborted: the files are no longer ours
}

// replacementPart is one file of a Replacement; the last one is written.
type replacementPart struct {
	base int64
	path string
	f    vfs.File
	off  int64 // bytes written to f
}

// NewReplacement starts the replacement of the sealed segments of
// [base, next) (see ReplaceSegments).
func (l *Log) NewReplacement(base, next int64) (*Replacement, error) {
	l.wmu.Lock()
	limit := l.opts.SegmentBytes
	l.wmu.Unlock()
	r := &Replacement{l: l, base: base, next: next, limit: limit, at: base, buf: make([]byte, 0, streamChunk)}
	if err := r.newPart(base); err != nil {
		return nil, err
	}
	return r, nil
}

// newPart starts the part whose first batch starts at base.
func (r *Replacement) newPart(base int64) error {
	path := filepath.Join(r.l.dir, segmentName(base, cleanedSuffix))
	f, err := r.l.opts.FS.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, vfs.FileMode)
	if err != nil {
		return fmt.Errorf("partition: write cleaned segment: %w", err)
	}
	r.parts = append(r.parts, replacementPart{base: base, path: path, f: f})
	return nil
}

// Add appends b, one whole, intact batch starting where the last ended.
func (r *Replacement) Add(b []byte) error {
	if r.err != nil {
		return r.err
	}
	_, rest, h, err := record.Next(b)
	if err == nil {
		_, err = record.Check(b)
	}
	if err != nil || len(rest) != 0 || h.BaseOffset != r.at {
		r.err = fmt.Errorf("%w: batch at %d (want %d): %v", ErrBadReplacement, h.BaseOffset, r.at, err)
		return r.err
	}
	r.at = h.NextOffset()
	cur := &r.parts[len(r.parts)-1]
	if size := cur.off + int64(len(r.buf)); size > 0 && (size+int64(len(b)) > r.limit || h.BaseOffset-cur.base > math.MaxUint32) {
		r.flush()
		if r.err == nil {
			r.err = r.newPart(h.BaseOffset)
		}
	}
	if len(r.buf)+len(b) > streamChunk {
		r.flush()
	}
	if len(b) > streamChunk {
		r.write(b)
	} else {
		r.buf = append(r.buf, b...)
	}
	return r.err
}

func (r *Replacement) flush() {
	r.write(r.buf)
	r.buf = r.buf[:0]
}

func (r *Replacement) write(b []byte) {
	if r.err != nil || len(b) == 0 {
		return
	}
	p := &r.parts[len(r.parts)-1]
	if _, err := p.f.WriteAt(b, p.off); err != nil {
		r.err = fmt.Errorf("partition: write cleaned segment: %w", err)
	}
	p.off += int64(len(b))
}

// Commit makes the replacement durable and swaps it in, crash-safe: after
// a crash the log holds either the old segments or the new ones. It
// waits for running reads; appends wait for the swap, not the writing.
func (r *Replacement) Commit() error {
	if r.done {
		return errReplacementDone
	}
	r.done = true
	r.flush()
	if r.err == nil && (r.at != r.next || r.parts[0].off == 0) {
		r.err = fmt.Errorf("%w: ends at %d, want %d", ErrBadReplacement, r.at, r.next)
	}
	err := r.err
	for _, p := range r.parts {
		if err == nil {
			err = r.l.fsync(p.f)
		}
		err = errors.Join(err, p.f.Close())
	}
	r.err = errReplacementDone // for a later Add
	if err != nil {
		r.removeParts()
		return err
	}
	if len(r.parts) == 1 {
		return r.l.swapIn(r.parts[0].path, r.base, r.next)
	}
	return r.l.swapInParts(r.parts, r.base, r.next)
}

// Abort drops an uncommitted replacement.
func (r *Replacement) Abort() {
	if !r.done {
		r.done, r.err = true, errReplacementDone
		for _, p := range r.parts {
			p.f.Close()
		}
		r.removeParts()
	}
}

func (r *Replacement) removeParts() {
	for _, p := range r.parts {
		r.l.opts.FS.Remove(p.path)
	}
}

// errReplacementDone marks a Replacement committed or aborted.
var errReplacementDone = errors.New("partition: replacement already committed or aborted")
