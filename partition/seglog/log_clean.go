package seglog

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/minikafka/minikafka-go/record"
)

// The log cleaner's swap (issue 30), as Kafka's: the cleaned bytes are
// written to "<base>.cleaned" and fsynced; renamed to
// "<base>-<next>.swap" (the swap is now decided); the old segments of
// [base, next) are deleted; the swap file is renamed to "<base>.log".
// Open finishes a swap a crash interrupted and deletes a cleaned file
// that never became one.
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// ErrBadReplacement is ReplaceSegments refusing bytes that are not one
// contiguous run of whole, intact batches over exactly the range replaced.
var ErrBadReplacement = errors.New("partition: replacement is not the segments' offsets in whole batches")

func swapName(base, next int64) string {
	return fmt.Sprintf("%0*d-%0*d%s", baseDigits, base, baseDigits, next, swapSuffix)
}

// parseSwapName returns the range in a swap file's name.
func parseSwapName(name string) (base, next int64, ok bool) {
	digits, ok := strings.CutSuffix(name, swapSuffix)
	a, b, found := strings.Cut(digits, "-")
	if !ok || !found || len(a) != baseDigits || len(b) != baseDigits {
		return 0, 0, false
	}
	base, err1 := strconv.ParseInt(a, 10, 64)
	next, err2 := strconv.ParseInt(b, 10, 64)
	return base, next, err1 == nil && err2 == nil && base >= 0 && base <= next
}

// ReplaceSegments swaps the sealed segments that together span exactly
// [base, next) for one segment holding data, which must be whole, intact
// batches spanning the same offsets (what compact.CleanAll makes of
// them). Crash-safe: after a crash the log holds either the old segments
// or the new one. It waits for running reads; appends wait for the swap.
// NewReplacement does the same with the bytes given batch by batch.
func (l *Log) ReplaceSegments(base, next int64, data []byte) error {
	r, err := l.NewReplacement(base, next)
	if err != nil {
		return err
	}
	for b, err := range record.Batches(data) {
		if err != nil {
			err = fmt.Errorf("%w: %v", ErrBadReplacement, err) // a torn batch
		} else {
			err = r.Add(b) // checks each batch, Commit the range's end
		}
		if err != nil {
			r.Abort()
			return err
		}
	}
	return r.Commit()
}

// swapIn swaps the durable cleaned file for the sealed segments of
// [base, next): renamed to the swap file (the swap is now decided), the
// segments deleted, the swap renamed into place. A cleaned file that
// cannot go in is deleted.
func (l *Log) swapIn(cleaned string, base, next int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	fsys := l.opts.FS
	first, last, err := l.sealedRange(base, next)
	if err != nil {
		fsys.Remove(cleaned)
		return err
	}
	swap := filepath.Join(l.dir, swapName(base, next))
	if err := fsys.Rename(cleaned, swap); err != nil {
		return fmt.Errorf("partition: swap segments: %w", err)
	}
	if err := fsys.SyncDir(l.dir); err != nil {
		return fmt.Errorf("partition: swap segments: %w", err)
	}
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	var removed int64
	for _, s := range l.segs[first : last+1] {
		if err := s.remove(); err != nil {
			l.werr = err // the swap file finishes the swap at the next Open
			return err
		}
		removed += s.size
	}
	s, err := l.finishSwap(swap, base)
	if err != nil {
		l.werr = err
		return err
	}
	l.mu.Lock()
	segs := append([]*segment(nil), l.segs[:first]...)
	segs = append(segs, s)
	l.segs = append(segs, l.segs[last+1:]...)
	l.bytes += s.size - removed
	l.mu.Unlock()
	l.logger.Debug("segments replaced", "base", base, "next", next, "bytes_before", removed, "bytes_after", s.size)
	return nil
}

// finishSwap renames the swap file to the segment of base and opens it,
// building its index. The caller holds wmu and truncMu.
func (l *Log) finishSwap(swap string, base int64) (*segment, error) {
	if err := l.opts.FS.Rename(swap, filepath.Join(l.dir, segmentName(base, logSuffix))); err != nil {
		return nil, fmt.Errorf("partition: swap segments: %w", err)
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		return nil, fmt.Errorf("partition: swap segments: %w", err)
	}
	return l.openSwapped(base)
}

// openSwapped opens the segment of base just swapped in, building its
// index.
func (l *Log) openSwapped(base int64) (*segment, error) {
	s, size, err := openSegment(l.files(), l.dir, base)
	if err != nil {
		return nil, err
	}
	if ok, err := l.loadSealed(s, size, true); err != nil || !ok {
		s.f.Close()
		return nil, errors.Join(err, &CorruptError{Path: s.path, Err: errors.New("the swapped segment does not scan")})
	}
	return s, nil
}

// recoverSwaps, at Open, finishes every swap a crash interrupted (deletes
// the segments of its range that are left, renames it into place) and
// deletes cleaned files that never became swaps.
func (l *Log) recoverSwaps() error {
	ents, err := l.opts.FS.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("partition: open log: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if _, ok := parseSegmentName(name, cleanedSuffix); ok {
			l.logger.Info("removing an unfinished cleaning", "file", name)
			if err := removeIfExists(l.opts.FS, filepath.Join(l.dir, name)); err != nil {
				return err
			}
			l.dirDirty = true
			continue
		}
		base, next, ok := parseSwapName(name)
		if !ok {
			continue
		}
		l.logger.Info("finishing an interrupted segment swap", "file", name)
		for _, o := range ents {
			for _, suffix := range []string{logSuffix, indexSuffix} {
				if b, ok := parseSegmentName(o.Name(), suffix); ok && b >= base && b < next {
					if err := removeIfExists(l.opts.FS, filepath.Join(l.dir, o.Name())); err != nil {
						return err
					}
				}
			}
		}
		if err := l.opts.FS.Rename(filepath.Join(l.dir, name), filepath.Join(l.dir, segmentName(base, logSuffix))); err != nil {
			return fmt.Errorf("partition: finish segment swap: %w", err)
		}
		if err := l.opts.FS.SyncDir(l.dir); err != nil {
			return fmt.Errorf("partition: finish segment swap: %w", err)
		}
	}
	return nil
}

// RollBefore seals the active segment if it holds offsets below offset, so
// that every offset below it lies in sealed segments (a cleaning up to it
// must not touch the segment appends go to).
func (l *Log) RollBefore(offset int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writerErr(); err != nil {
		return err
	}
	if active := l.segs[len(l.segs)-1]; active.size > 0 && active.base < offset {
		_, err := l.roll(l.end)
		return err
	}
	return nil
}
