package seglog

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"sort"

	"github.com/minikafka/minikafka-go/internal/nozero"
	"github.com/minikafka/minikafka-go/record"
)

// headerChunk is how many headers Batches reads per lock hold.
const headerChunk = 256

// Read returns whole batches starting with the one that holds offset (a
// consumer skips the records before offset), as many as fit in maxBytes but
// always at least that first batch. It may continue into later segments.
// offset == EndOffset gives (nil, nil); an offset below StartOffset or above
// EndOffset gives an *OffsetRangeError. The returned slice is the caller's;
// Read allocates up to maxBytes (or one batch), so the caller bounds it.
func (l *Log) Read(offset int64, maxBytes int) ([]byte, error) {
	l.truncMu.RLock()
	defer l.truncMu.RUnlock()
	k, s, e, size, err := l.locate(offset)
	if err != nil || s == nil {
		return nil, err
	}
	pos, h, err := findBatch(s, e, size, offset)
	if err != nil {
		return nil, err
	}
	want := max(int64(maxBytes), int64(h.Size()))

	// Plan the reads with the sizes published now: each ends at a batch
	// boundary, and truncMu keeps the bytes below them in place.
	type part struct {
		s        *segment
		from, n  int64
		complete bool // runs to a published size, so ends at a boundary
	}
	parts := make([]part, 0, 2)
	var total int64
	l.mu.RLock()
	for i := k; i < len(l.segs) && total < want; i++ {
		t, from := l.segs[i], int64(0)
		if i == k {
			from = pos
		}
		n := min(t.size-from, want-total)
		if n > 0 {
			parts = append(parts, part{s: t, from: from, n: n, complete: n == t.size-from})
			total += n
		}
	}
	l.mu.RUnlock()

	// Every byte up to off is read from the files before it is returned,
	// and nothing past off is (cut from the capacity too).
	buf := nozero.Bytes(int(total))
	var off int64
	for _, p := range parts {
		dst := buf[off : off+p.n]
		if _, err := p.s.f.ReadAt(dst, p.from); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, &CorruptError{Path: p.s.path, Pos: p.from, Err: io.ErrUnexpectedEOF}
			}
			return nil, fmt.Errorf("partition: read %s: %w", p.s.path, err)
		}
		if !p.complete {
			// maxBytes ran out inside this part: keep its whole batches.
			// The first part always holds at least the first batch.
			off += int64(wholeBatches(dst))
			break
		}
		off += p.n
	}
	return buf[:off:off], nil
}

// wholeBatches is the length of the run of whole batches at the start of b.
func wholeBatches(b []byte) int {
	n := 0
	for {
		_, rest, _, err := record.Next(b[n:])
		if err != nil {
			return n
		}
		n = len(b) - len(rest)
	}
}

// CopyTo writes the raw bytes of every batch with offsets below end, from
// StartOffset on, to w and returns the count (used for snapshots). end must
// be a batch boundary in [StartOffset, EndOffset]. It may run next to
// Append; TruncateTo, Reset and Close wait until it returns.
func (l *Log) CopyTo(w io.Writer, end int64) (int64, error) {
	l.truncMu.RLock()
	defer l.truncMu.RUnlock()
	type part struct {
		s *segment
		n int64
	}
	var (
		parts    []part
		cut      *segment // segment that holds end strictly inside
		cutEntry indexEntry
		cutSize  int64
	)
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return 0, ErrClosed
	}
	if start := l.segs[0].base; end < start || end > l.end {
		err := &OffsetRangeError{Offset: end, Start: start, End: l.end}
		l.mu.RUnlock()
		return 0, err
	}
	for _, s := range l.segs {
		if s.base >= end {
			break
		}
		if s.next <= end {
			parts = append(parts, part{s, s.size})
			continue
		}
		cut, cutEntry, cutSize = s, s.idx.find(relOffset(s, end)), s.size
		break
	}
	l.mu.RUnlock()
	if cut != nil {
		pos, h, err := findBatch(cut, cutEntry, cutSize, end)
		if err != nil {
			return 0, err
		}
		if h.BaseOffset != end {
			return 0, &BoundaryError{Offset: end, BatchBase: h.BaseOffset, BatchNext: h.NextOffset()}
		}
		parts = append(parts, part{cut, pos})
	}
	var written int64
	for _, p := range parts {
		n, err := io.Copy(w, io.NewSectionReader(p.s.f, 0, p.n))
		written += n
		if err != nil {
			return written, fmt.Errorf("partition: copy %s: %w", p.s.path, err)
		}
		if n != p.n {
			return written, &CorruptError{Path: p.s.path, Pos: n, Err: io.ErrUnexpectedEOF}
		}
	}
	return written, nil
}

// Batches yields the headers of the stored batches in order, from the one
// that holds from up to the log end as of the start of the iteration.
// An offset out of range yields one *OffsetRangeError, as does a
// TruncateTo below the iteration's position while it runs. No lock is held
// while the loop body runs, so the body may call any method.
func (l *Log) Batches(from int64) iter.Seq2[record.Header, error] {
	return func(yield func(record.Header, error) bool) {
		stop := l.EndOffset()
		next := from
		var hs []record.Header
		for {
			var err error
			if hs, err = l.headers(next, stop, hs[:0]); err != nil {
				yield(record.Header{}, err)
				return
			}
			if len(hs) == 0 {
				return
			}
			for _, h := range hs {
				if !yield(h, nil) {
					return
				}
			}
			next = hs[len(hs)-1].NextOffset()
		}
	}
}

// headers appends to out up to headerChunk headers of one segment: the
// batch holding offset and those after it that start below stop.
func (l *Log) headers(offset, stop int64, out []record.Header) ([]record.Header, error) {
	l.truncMu.RLock()
	defer l.truncMu.RUnlock()
	_, s, e, size, err := l.locate(offset)
	if err != nil || s == nil || offset >= stop {
		return out, err
	}
	sc := newHeaderScanner(s, e, size)
	for len(out) < headerChunk {
		h, _, err := sc.scan()
		if errors.Is(err, io.EOF) || (err == nil && h.BaseOffset >= stop) {
			break
		}
		if err != nil {
			return out, err
		}
		if h.NextOffset() > offset {
			out = append(out, h)
		}
	}
	return out, nil
}

// OffsetForTimestamp finds the first batch, in offset order, whose
// MaxTimestamp is >= ts, and returns its base offset and MaxTimestamp
// (ListOffsets by time), or the log start offset when that batch began
// before it; batches wholly below the start are skipped. ok is false when
// no batch qualifies, and also when the log is closed or cannot be read
// (logged at Warn).
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, maxTS int64, ok bool) {
	l.truncMu.RLock()
	defer l.truncMu.RUnlock()
	start := l.StartOffset()
	for i := 0; ; i++ {
		l.mu.RLock()
		if l.closed || i >= len(l.segs) {
			l.mu.RUnlock()
			return 0, 0, false
		}
		s := l.segs[i]
		e, found := s.idx.findTime(ts)
		size := s.size
		l.mu.RUnlock()
		if !found {
			continue
		}
		sc := newHeaderScanner(s, e, size)
		for {
			h, _, err := sc.scan()
			if errors.Is(err, io.EOF) {
				break // only with an index that disagrees with the file
			}
			if err != nil {
				l.logger.Warn("offset for timestamp: cannot read log", "err", err)
				return 0, 0, false
			}
			if h.MaxTimestamp >= ts && h.NextOffset() > start {
				return max(h.BaseOffset, start), h.MaxTimestamp, true
			}
		}
	}
}

// locate finds the segment holding offset, the index entry to scan from
// and the segment's published size. s is nil when offset == EndOffset. The
// caller holds truncMu shared, which keeps the result valid.
func (l *Log) locate(offset int64) (k int, s *segment, e indexEntry, size int64, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, nil, e, 0, ErrClosed
	}
	if offset < l.start || offset > l.end {
		return 0, nil, e, 0, &OffsetRangeError{Offset: offset, Start: l.start, End: l.end}
	}
	if offset == l.end {
		return 0, nil, e, 0, nil
	}
	k = l.findSegment(offset)
	s = l.segs[k]
	return k, s, s.idx.find(relOffset(s, offset)), s.size, nil
}

// findSegment returns the index of the last segment whose base is <=
// offset. The caller holds mu (or wmu) and has checked offset >= start.
func (l *Log) findSegment(offset int64) int {
	return sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
}

// relOffset is offset relative to the segment base, for index lookups; an
// offset deep inside the segment's last batch is clamped (every indexed
// batch starts within math.MaxUint32 of the base).
func relOffset(s *segment, offset int64) uint32 {
	return uint32(min(offset-s.base, math.MaxUint32))
}

// findBatch scans s from index entry e up to end for the batch that holds
// offset, or that starts at it when offset is the end of the segment's
// bytes (then pos == end and h has only BaseOffset set).
func findBatch(s *segment, e indexEntry, end, offset int64) (pos int64, h record.Header, err error) {
	sc := newHeaderScanner(s, e, end)
	for {
		h, pos, err := sc.scan()
		if errors.Is(err, io.EOF) {
			if sc.next == offset {
				return end, record.Header{BaseOffset: offset}, nil
			}
			return 0, h, &CorruptError{Path: s.path, Pos: end, Err: fmt.Errorf("offset %d not found", offset)}
		}
		if err != nil {
			return 0, h, err
		}
		if h.NextOffset() > offset {
			return pos, h, nil
		}
	}
}
