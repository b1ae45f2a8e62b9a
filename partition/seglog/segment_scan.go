package seglog

import (
	"errors"
	"fmt"
	"io"

	"github.com/minikafka/minikafka-go/record"
)

// scanBlock is how many bytes a headerScanner reads at a time: enough to
// hold the headers of many small batches, small enough that skipping over
// big batches does not read their records.
const scanBlock = 4096

// headerScanner walks the batch headers of one segment file between two
// batch boundaries without decoding records. It reads with ReadAt, so it
// can run next to the writer and to other readers; the caller guarantees
// that [pos, end) stays in place (it holds Log.truncMu or is the writer).
type headerScanner struct {
	r      io.ReaderAt
	path   string
	pos    int64 // position of the next header
	end    int64 // stop here: a batch boundary
	next   int64 // base offset the batch at pos must have
	buf    []byte
	bufPos int64 // file position of buf[0]
}

func newHeaderScanner(s *segment, e indexEntry, end int64) *headerScanner {
	return &headerScanner{r: s.f, path: s.path, pos: int64(e.pos), end: end, next: s.base + int64(e.rel)}
}

// scan returns the next batch header and its position, io.EOF at end, or a
// *CorruptError when the bytes are not the batch expected there.
func (s *headerScanner) scan() (record.Header, int64, error) {
	if s.pos >= s.end {
		return record.Header{}, s.pos, io.EOF
	}
	off := s.pos - s.bufPos
	if s.buf == nil || off < 0 || off+record.HeaderSize > int64(len(s.buf)) {
		n := min(scanBlock, s.end-s.pos)
		if n < record.HeaderSize {
			return record.Header{}, s.pos, s.corrupt(record.ErrShortBuffer)
		}
		if s.buf == nil {
			s.buf = make([]byte, scanBlock)
		}
		s.buf = s.buf[:n]
		if _, err := s.r.ReadAt(s.buf, s.pos); err != nil {
			if errors.Is(err, io.EOF) {
				return record.Header{}, s.pos, s.corrupt(io.ErrUnexpectedEOF)
			}
			return record.Header{}, s.pos, fmt.Errorf("partition: read %s: %w", s.path, err)
		}
		s.bufPos, off = s.pos, 0
	}
	h, err := record.ParseHeader(s.buf[off:])
	if err != nil {
		return h, s.pos, s.corrupt(err)
	}
	if h.BaseOffset != s.next {
		return h, s.pos, s.corrupt(fmt.Errorf("batch base offset %d, want %d", h.BaseOffset, s.next))
	}
	if int64(h.Size()) > s.end-s.pos {
		return h, s.pos, s.corrupt(&record.LengthError{Length: h.Length, Have: int(s.end - s.pos - record.LogOverhead)})
	}
	pos := s.pos
	s.pos += int64(h.Size())
	s.next = h.NextOffset()
	return h, pos, nil
}

func (s *headerScanner) corrupt(err error) error {
	return &CorruptError{Path: s.path, Pos: s.pos, Err: err}
}
