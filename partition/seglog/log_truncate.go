package seglog

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// TruncateTo drops every batch at or after offset, which must be a batch
// boundary (ErrNotBoundary otherwise) in [StartOffset, EndOffset]; offset
// == EndOffset changes nothing. Segments after the one holding offset are
// deleted. It waits for running reads. Like Append it is not fsynced.
func (l *Log) TruncateTo(offset int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.serr != nil {
		return l.serr
	}
	if l.werr != nil {
		return l.werr
	}
	if offset < l.start || offset > l.end {
		return &OffsetRangeError{Offset: offset, Start: l.start, End: l.end}
	}
	if offset == l.end {
		return nil
	}
	// The writer holds wmu: nobody else changes segs, sizes or indexes,
	// so they can be read and the file scanned without mu or truncMu.
	k := l.findSegment(offset)
	s := l.segs[k]
	pos, h, err := findBatch(s, s.idx.find(relOffset(s, offset)), s.size, offset)
	if err != nil {
		return err
	}
	if h.BaseOffset != offset {
		return &BoundaryError{Offset: offset, BatchBase: h.BaseOffset, BatchNext: h.NextOffset()}
	}
	idx, err := l.indexBefore(s, pos)
	if err != nil {
		return err
	}

	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	if err := s.f.Truncate(pos); err != nil {
		return fmt.Errorf("partition: truncate: %w", err)
	}
	s.dataDirty = true
	dropped := l.segs[k+1:]
	// s is the active segment now: an index file of it (written at its
	// roll) describes bytes that are gone.
	errs := []error{removeIfExists(l.opts.FS, s.indexPath())}
	s.indexDirty = false
	l.dirDirty = true
	for _, d := range dropped {
		errs = append(errs, d.remove())
	}
	oldEnd := l.end
	l.mu.Lock()
	l.bytes -= s.size - pos
	for _, d := range dropped {
		l.bytes -= d.size
	}
	clear(dropped)
	l.segs = l.segs[:k+1]
	s.size, s.next, s.idx = pos, offset, idx
	l.end = offset
	l.mu.Unlock()
	l.logger.Info("log truncated", "from_end", oldEnd, "to_end", offset, "deleted_segments", len(dropped))
	return errors.Join(errs...)
}

// indexBefore builds, as a new value, the index of s's batches before
// file position pos (a boundary), recomputing the running timestamps of
// its last interval. The caller is the writer.
func (l *Log) indexBefore(s *segment, pos int64) (offsetIndex, error) {
	idx, redo, ok := s.idx.cutBefore(uint32(pos))
	if !ok {
		return idx, nil
	}
	sc := newHeaderScanner(s, redo, pos)
	for {
		h, p, err := sc.scan()
		if errors.Is(err, io.EOF) {
			return idx, nil
		}
		if err != nil {
			return idx, err
		}
		idx.note(uint32(h.BaseOffset-s.base), uint32(p), h.MaxTimestamp, l.opts.IndexIntervalBytes)
		idx.noteEpoch(uint32(h.BaseOffset-s.base), h.PartitionLeaderEpoch)
	}
}

// Reset deletes every batch and segment: the log is empty and starts (and
// ends) at start. It waits for running reads. Like Append it is not
// fsynced.
func (l *Log) Reset(start int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.serr != nil {
		return l.serr // sticky until reopen, as for the other writer methods
	}
	if start < 0 {
		return &OffsetRangeError{Offset: start, Start: 0, End: l.end}
	}
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	// Create first: on failure the old log stays whole. A segment with the
	// same base is emptied by the create and must not be deleted after.
	s, err := createSegment(l.files(), l.dir, start)
	if err != nil {
		return err
	}
	l.dirDirty = true
	var errs []error
	for _, old := range l.segs {
		if old.base == start {
			errs = append(errs, old.f.Close())
			continue
		}
		errs = append(errs, old.remove())
	}
	l.activeSince = time.Now()
	l.mu.Lock()
	l.segs = []*segment{s}
	l.start, l.end, l.bytes = start, start, 0
	l.mu.Unlock()
	l.werr = nil // the files a failed write left behind are gone
	l.logger.Info("log reset", "start", start)
	return errors.Join(errs...)
}
