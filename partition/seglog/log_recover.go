package seglog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/record"
)

// loadSegments loads the segments in l.dir into l.segs:
//   - sealed segments (all but the last) come with their index file when it
//     is valid and matches the segment; otherwise their headers are scanned
//     to rebuild it, and the rebuilt index is written back;
//   - the last segment is read in full and every batch checked (header,
//     length, CRC32C, base offset continuity); the file is cut after the
//     last good batch, and its index is rebuilt in memory.
//
// A sealed segment that turns out damaged or that does not end where the
// next one starts becomes the last: every later segment is deleted, since
// a log must be one contiguous run of offsets. Every cut is logged at Warn.
func (l *Log) loadSegments() error {
	if err := l.recoverSwapsets(); err != nil { // first: its parts are cleaned files
		return err
	}
	if err := l.recoverSwaps(); err != nil {
		return err
	}
	bases, err := l.listSegments()
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		s, err := createSegment(l.files(), l.dir, 0)
		if err != nil {
			return err
		}
		l.segs = []*segment{s}
		l.dirDirty = true
		return nil
	}
	for i, base := range bases {
		s, fileSize, err := openSegment(l.files(), l.dir, base)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
		last := i == len(bases)-1
		if !last {
			ok, err := l.loadSealed(s, fileSize, false)
			if err != nil {
				return err
			}
			if ok && s.next != bases[i+1] {
				l.logger.Warn("segments are not contiguous; dropping the later ones",
					"segment", s.path, "segment_end", s.next, "next_segment", bases[i+1])
				ok = false
			}
			if !ok {
				if err := l.dropSegments(bases[i+1:]); err != nil {
					return err
				}
				last = true
			}
		}
		if last {
			return l.recoverLast(s, fileSize)
		}
	}
	return nil
}

// listSegments returns the base offsets of the segment files in l.dir in
// order, and deletes index files that have no segment.
func (l *Log) listSegments() ([]int64, error) {
	ents, err := l.opts.FS.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("partition: open log: %w", err)
	}
	var bases []int64
	logs := make(map[int64]bool)
	for _, e := range ents {
		if base, ok := parseSegmentName(e.Name(), logSuffix); ok && e.Type().IsRegular() {
			bases = append(bases, base)
			logs[base] = true
		}
	}
	for _, e := range ents {
		if base, ok := parseSegmentName(e.Name(), indexSuffix); ok && !logs[base] {
			l.logger.Info("removing index without segment", "file", e.Name())
			if err := removeIfExists(l.opts.FS, filepath.Join(l.dir, e.Name())); err != nil {
				return nil, err
			}
			l.dirDirty = true
		}
	}
	slices.Sort(bases)
	return bases, nil
}

// loadSealed fills in a sealed segment's size, next and index, from its
// index file if that is valid, else by scanning its headers (and writing
// the rebuilt index). It reports false when the headers show damage; the
// segment is then left empty for recoverLast to check in full. swapped
// says the segment was just swapped in by a cleaning, which writes no
// index: building it is routine then, not worth an Info line.
func (l *Log) loadSealed(s *segment, fileSize int64, swapped bool) (bool, error) {
	data, err := vfs.ReadFile(l.opts.FS, s.indexPath())
	if err == nil {
		f, derr := decodeIndex(data)
		if derr == nil {
			derr = checkIndex(s, f, fileSize)
		}
		if derr == nil {
			s.size, s.next, s.idx = f.size, f.next, f.idx
			return true, nil
		}
		l.logger.Info("rebuilding segment index", "segment", s.path, "reason", derr)
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("partition: read index: %w", err)
	} else if !swapped {
		l.logger.Info("rebuilding missing segment index", "segment", s.path)
	}
	sc := newHeaderScanner(s, indexEntry{}, fileSize)
	var idx offsetIndex
	for {
		h, pos, err := sc.scan()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil && (h.BaseOffset-s.base > math.MaxUint32 || pos > math.MaxUint32) {
			err = &CorruptError{Path: s.path, Pos: pos, Err: errors.New("batch too far from the segment start")}
		}
		if errors.Is(err, ErrCorrupt) {
			l.logger.Warn("sealed segment is damaged", "segment", s.path, "err", err)
			return false, nil
		}
		if err != nil {
			return false, err
		}
		idx.note(uint32(h.BaseOffset-s.base), uint32(pos), h.MaxTimestamp, l.opts.IndexIntervalBytes)
		idx.noteEpoch(uint32(h.BaseOffset-s.base), h.PartitionLeaderEpoch)
	}
	s.size, s.next, s.idx = fileSize, sc.next, idx
	if err := s.writeIndex(); err != nil {
		return false, err
	}
	return true, nil
}

// checkIndex tells whether a decoded index file describes the segment as
// it is: same base and size, and the batches from its last entry on end
// exactly at the recorded size and next offset. That catches an index left
// over from bytes that were since truncated and rewritten.
func checkIndex(s *segment, f indexFile, fileSize int64) error {
	if f.base != s.base || f.size != fileSize {
		return fmt.Errorf("%w: index of base %d and %d bytes for segment of %d bytes", errBadIndex, f.base, f.size, fileSize)
	}
	if len(f.idx.entries) == 0 {
		return nil
	}
	sc := newHeaderScanner(s, f.idx.entries[len(f.idx.entries)-1], f.size)
	for {
		_, _, err := sc.scan()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %w", errBadIndex, err)
		}
	}
	if sc.next != f.next {
		return fmt.Errorf("%w: segment ends at offset %d, index says %d", errBadIndex, sc.next, f.next)
	}
	return nil
}

// recoverLast reads the last segment in full, checks every batch, builds
// its index and cuts the file after the last good batch.
func (l *Log) recoverLast(s *segment, fileSize int64) error {
	size, next, idx, cause, err := scanSegment(s, fileSize, l.opts.IndexIntervalBytes)
	if err != nil {
		return err
	}
	if cause != nil {
		l.logger.Warn("cutting damaged log tail", "segment", s.path, "keep_bytes", size,
			"cut_bytes", fileSize-size, "end_offset", next, "reason", cause)
		if err := s.f.Truncate(size); err != nil {
			return fmt.Errorf("partition: cut log tail: %w", err)
		}
		s.dataDirty = true
	}
	s.size, s.next, s.idx = size, next, idx
	// The active segment has no index file while the log is open: one
	// written by Close describes bytes that appends and truncations will
	// change, and the next roll writes a fresh one.
	if err := l.opts.FS.Remove(s.indexPath()); err == nil {
		l.dirDirty = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("partition: remove active index: %w", err)
	}
	return nil
}

// scanSegment reads a segment file from its start and checks each batch
// completely: the header parses, the whole batch is present, its CRC32C
// matches and its base offset follows the previous batch. It returns the
// length and end offset of the valid prefix with its index, and the reason
// it stopped early (nil when the whole file is valid). err is an I/O error.
func scanSegment(s *segment, fileSize int64, interval int) (size, next int64, idx offsetIndex, cause, err error) {
	br := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, fileSize), 256<<10)
	var buf []byte
	next = s.base
	for size < fileSize {
		if fileSize-size < record.HeaderSize {
			return size, next, idx, fmt.Errorf("%d bytes after the last batch: %w", fileSize-size, record.ErrShortBuffer), nil
		}
		if len(buf) < record.HeaderSize {
			buf = make([]byte, 64<<10)
		}
		if _, err := io.ReadFull(br, buf[:record.HeaderSize]); err != nil {
			return size, next, idx, nil, fmt.Errorf("partition: read %s: %w", s.path, err)
		}
		h, herr := record.ParseHeader(buf[:record.HeaderSize])
		switch {
		case herr != nil:
			return size, next, idx, herr, nil
		case h.BaseOffset != next:
			return size, next, idx, fmt.Errorf("batch base offset %d, want %d", h.BaseOffset, next), nil
		case int64(h.Size()) > fileSize-size:
			return size, next, idx, fmt.Errorf("batch of %d bytes, %d left: %w", h.Size(), fileSize-size, io.ErrUnexpectedEOF), nil
		case h.BaseOffset-s.base > math.MaxUint32 || size > math.MaxUint32:
			return size, next, idx, errors.New("batch too far from the segment start"), nil
		}
		if len(buf) < h.Size() {
			nb := make([]byte, h.Size())
			copy(nb, buf[:record.HeaderSize])
			buf = nb
		}
		if _, err := io.ReadFull(br, buf[record.HeaderSize:h.Size()]); err != nil {
			return size, next, idx, nil, fmt.Errorf("partition: read %s: %w", s.path, err)
		}
		if _, err := record.Check(buf[:h.Size()]); err != nil {
			return size, next, idx, err, nil
		}
		idx.note(uint32(h.BaseOffset-s.base), uint32(size), h.MaxTimestamp, interval)
		idx.noteEpoch(uint32(h.BaseOffset-s.base), h.PartitionLeaderEpoch)
		size += int64(h.Size())
		next = h.NextOffset()
	}
	return size, next, idx, nil, nil
}

// dropSegments deletes the segment files (and indexes) with these bases.
func (l *Log) dropSegments(bases []int64) error {
	for _, base := range bases {
		s := &segment{base: base, path: filepath.Join(l.dir, segmentName(base, logSuffix))}
		l.logger.Warn("deleting segment after a damaged or discontinuous one", "segment", s.path)
		if err := errors.Join(removeIfExists(l.opts.FS, s.path), removeIfExists(l.opts.FS, s.indexPath())); err != nil {
			return err
		}
		l.dirDirty = true
	}
	return nil
}
