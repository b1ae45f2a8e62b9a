package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// A cleaning whose result passes a segment is written in parts, each
// "<part base>.cleaned", and swapped in as one: the swap is decided when
// the manifest "<base>-<next>.swapset", naming every part, takes its
// name (written whole under a temporary name first); then the old
// segments of [base, next) are deleted, that made durable, and the parts
// renamed into place. Open finishes a decided swap: a segment file in the
// range is a part already in place when the manifest names its base and
// no "<base>.cleaned" is left, and an old segment otherwise.
const (
	swapsetSuffix = ".swapset"
	tmpSuffix     = ".tmp"
)

func swapsetName(base, next int64) string {
	return strings.TrimSuffix(swapName(base, next), swapSuffix) + swapsetSuffix
}

// encodeSwapset is the manifest of parts starting at bases: their count,
// each base, and a CRC32C of those bytes.
func encodeSwapset(bases []int64) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(bases)))
	for _, base := range bases {
		b = binary.BigEndian.AppendUint64(b, uint64(base))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32c))
}

var errBadSwapset = errors.New("partition: damaged swap manifest")

func decodeSwapset(b []byte) ([]int64, error) {
	if len(b) < 8 {
		return nil, errBadSwapset
	}
	n := int(binary.BigEndian.Uint32(b))
	if len(b) != 4+8*n+4 || crc32.Checksum(b[:len(b)-4], crc32c) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, errBadSwapset
	}
	bases := make([]int64, n)
	for i := range bases {
		bases[i] = int64(binary.BigEndian.Uint64(b[4+8*i:]))
	}
	return bases, nil
}

// swapInParts swaps the durable parts for the sealed segments of
// [base, next), as swapIn does one file.
func (l *Log) swapInParts(parts []replacementPart, base, next int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	fsys := l.opts.FS
	var bases []int64
	for _, p := range parts {
		bases = append(bases, p.base)
	}
	first, last, err := l.sealedRange(base, next)
	if err == nil {
		err = l.decideSwapset(base, next, bases)
	}
	if err != nil {
		for _, p := range parts {
			fsys.Remove(p.path)
		}
		return err
	}
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	var removed int64
	for _, s := range l.segs[first : last+1] {
		if err := s.remove(); err != nil {
			l.werr = err // the manifest finishes the swap at the next Open
			return err
		}
		removed += s.size
	}
	segs, err := l.finishSwapset(base, next, bases)
	if err != nil {
		l.werr = err // the manifest finishes the swap at the next Open
		return err
	}
	l.mu.Lock()
	l.segs = slices.Concat(l.segs[:first], segs, l.segs[last+1:])
	for _, s := range segs {
		l.bytes += s.size
	}
	l.bytes -= removed
	l.mu.Unlock()
	l.logger.Debug("segments replaced", "base", base, "next", next, "parts", len(segs), "bytes_before", removed)
	return nil
}

// sealedRange finds the sealed segments that together span exactly
// [base, next): a *BoundaryError if none do, or the writer's error. The
// caller holds wmu.
func (l *Log) sealedRange(base, next int64) (first, last int, err error) {
	if err := l.writerErr(); err != nil {
		return 0, 0, err
	}
	first, last = -1, -1
	for i, s := range l.segs[:len(l.segs)-1] {
		if s.base == base {
			first = i
		}
		if first >= 0 && s.next == next {
			return first, i, nil
		}
	}
	return 0, 0, &BoundaryError{Offset: base}
}

// decideSwapset makes the parts' names durable, then writes the manifest
// under its temporary name, syncs it and renames it: the swap is decided.
func (l *Log) decideSwapset(base, next int64, bases []int64) error {
	fsys := l.opts.FS
	set := filepath.Join(l.dir, swapsetName(base, next))
	err := fsys.SyncDir(l.dir)
	if err == nil {
		err = vfs.WriteFile(fsys, set+tmpSuffix, encodeSwapset(bases), vfs.FileMode)
	}
	if err == nil {
		err = syncFile(fsys, set+tmpSuffix, l.fsync)
	}
	if err == nil {
		err = fsys.Rename(set+tmpSuffix, set)
	}
	if err == nil {
		err = fsys.SyncDir(l.dir)
	}
	if err != nil {
		fsys.Remove(set + tmpSuffix)
		return fmt.Errorf("partition: swap segments: %w", err)
	}
	return nil
}

// finishSwapset, once the old segments are gone, places the parts
// (placeParts) and opens them. The caller holds wmu and truncMu.
func (l *Log) finishSwapset(base, next int64, bases []int64) ([]*segment, error) {
	if err := l.placeParts(base, next, bases); err != nil {
		return nil, err
	}
	var segs []*segment
	for _, b := range bases {
		s, err := l.openSwapped(b)
		if err != nil {
			for _, o := range segs {
				o.f.Close()
			}
			return nil, err
		}
		segs = append(segs, s)
	}
	return segs, nil
}

// placeParts makes the old segments' removal durable, renames the parts
// of bases into place and drops the manifest.
func (l *Log) placeParts(base, next int64, bases []int64) error {
	fsys := l.opts.FS
	err := fsys.SyncDir(l.dir)
	for _, b := range bases {
		if err == nil {
			err = fsys.Rename(filepath.Join(l.dir, segmentName(b, cleanedSuffix)), filepath.Join(l.dir, segmentName(b, logSuffix)))
		}
	}
	if err == nil {
		set := filepath.Join(l.dir, swapsetName(base, next))
		err = errors.Join(fsys.SyncDir(l.dir), removeIfExists(fsys, set), fsys.SyncDir(l.dir))
	}
	if err != nil {
		return fmt.Errorf("partition: swap segments: %w", err)
	}
	return nil
}

// recoverSwapsets, at Open, finishes every decided swap of parts a crash
// interrupted and deletes manifests never decided. It runs before the
// cleaned files that belong to no swap are deleted.
func (l *Log) recoverSwapsets() error {
	fsys := l.opts.FS
	ents, err := fsys.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("partition: open log: %w", err)
	}
	exists := func(name string) bool {
		_, err := fsys.Stat(filepath.Join(l.dir, name))
		return !errors.Is(err, fs.ErrNotExist)
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, swapsetSuffix+tmpSuffix) {
			if err := removeIfExists(fsys, filepath.Join(l.dir, name)); err != nil {
				return err
			}
			continue
		}
		base, next, ok := parseSwapName(strings.TrimSuffix(name, swapsetSuffix) + swapSuffix)
		if !ok || !strings.HasSuffix(name, swapsetSuffix) {
			continue
		}
		data, err := vfs.ReadFile(fsys, filepath.Join(l.dir, name))
		if err != nil {
			return fmt.Errorf("partition: open log: %w", err)
		}
		bases, err := decodeSwapset(data)
		if err != nil {
			return &CorruptError{Path: filepath.Join(l.dir, name), Err: err}
		}
		l.logger.Info("finishing an interrupted segment swap", "file", name, "parts", len(bases))
		for _, o := range ents {
			for _, suffix := range []string{logSuffix, indexSuffix} {
				b, ok := parseSegmentName(o.Name(), suffix)
				placed := slices.Contains(bases, b) && !exists(segmentName(b, cleanedSuffix))
				if ok && b >= base && b < next && !placed {
					if err := removeIfExists(fsys, filepath.Join(l.dir, o.Name())); err != nil {
						return err
					}
				}
			}
		}
		var left []int64 // the parts not yet in place
		for _, b := range bases {
			if exists(segmentName(b, cleanedSuffix)) {
				left = append(left, b)
			}
		}
		if err := l.placeParts(base, next, left); err != nil {
			return err
		}
	}
	return nil
}
