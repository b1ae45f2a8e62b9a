package seglog

import (
	"errors"
	"time"
)

// SegmentInfo describes one segment, for retention decisions.
type SegmentInfo struct {
	Base, Next int64 // the segment's offsets are [Base, Next)
	Bytes      int64
	// MaxTimestamp is the largest MaxTimestamp of the segment's batches,
	// or -1 when it holds none.
	MaxTimestamp int64
	Active       bool // the last segment, the one appends go to
}

// Segments describes the segments in offset order.
func (l *Log) Segments() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		ts := int64(-1)
		if n := len(s.idx.entries); n > 0 {
			ts = s.idx.entries[n-1].maxTS // a running maximum
		}
		out[i] = SegmentInfo{Base: s.base, Next: s.next, Bytes: s.size, MaxTimestamp: ts, Active: i == len(l.segs)-1}
	}
	return out
}

// SetSegmentLimits changes Options.SegmentBytes and SegmentAge for the
// appends that follow (a topic's segment.bytes and segment.ms changed).
// bytes <= 0 keeps the current size limit.
func (l *Log) SetSegmentLimits(bytes int64, age time.Duration) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if bytes > 0 {
		l.opts.SegmentBytes = min(bytes, int64(^uint32(0)))
	}
	l.opts.SegmentAge = max(age, 0)
}

// segmentAged reports whether the active segment is older than
// Options.SegmentAge. The caller holds wmu.
func (l *Log) segmentAged() bool {
	return l.opts.SegmentAge > 0 && time.Since(l.activeSince) >= l.opts.SegmentAge
}

// AdvanceStart moves the log start offset up to offset (Kafka's log start
// offset, moved by retention and DeleteRecords) and deletes the segments
// that lie wholly below it. offset may fall inside a batch: readers asking
// for it get that whole batch, as in Kafka. An offset at or below the
// current start changes nothing; one past EndOffset is an
// *OffsetRangeError. When offset is EndOffset and the active segment holds
// batches, it is rolled first so that it can go too.
//
// Like Append it is not fsynced: the caller records the new start durably
// first (the FSM's checkpoint) and calls AdvanceStart again at recovery.
// It waits for running reads.
func (l *Log) AdvanceStart(offset int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writerErr(); err != nil {
		return err
	}
	switch {
	case offset > l.end:
		return &OffsetRangeError{Offset: offset, Start: l.start, End: l.end}
	case offset <= l.start:
		return nil
	}
	if active := l.segs[len(l.segs)-1]; offset == l.end && active.size > 0 {
		if _, err := l.roll(l.end); err != nil {
			return err
		}
	}
	k := 0 // segments [0, k) end at or below offset
	for k < len(l.segs)-1 && l.segs[k].next <= offset {
		k++
	}
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	var errs []error
	for _, d := range l.segs[:k] {
		errs = append(errs, d.remove())
	}
	if k > 0 {
		l.dirDirty = true
	}
	l.mu.Lock()
	for _, d := range l.segs[:k] {
		l.bytes -= d.size
	}
	l.segs = append([]*segment(nil), l.segs[k:]...)
	l.start = offset
	l.mu.Unlock()
	l.logger.Debug("log start advanced", "start", offset, "deleted_segments", k)
	return errors.Join(errs...)
}

// SizeBelow is the number of bytes of the stored batches with offsets
// below end, from the first stored batch on (what CopyTo(w, end) writes).
// end must be a batch boundary in [StartOffset, EndOffset].
func (l *Log) SizeBelow(end int64) (int64, error) {
	l.truncMu.RLock()
	defer l.truncMu.RUnlock()
	k, s, e, size, err := l.locate(end)
	if err != nil {
		return 0, err
	}
	if s == nil { // end is the log end
		return l.Size(), nil
	}
	pos, h, err := findBatch(s, e, size, end)
	if err != nil {
		return 0, err
	}
	if h.BaseOffset != end {
		return 0, &BoundaryError{Offset: end, BatchBase: h.BaseOffset, BatchNext: h.NextOffset()}
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, t := range l.segs[:k] {
		pos += t.size
	}
	return pos, nil
}
