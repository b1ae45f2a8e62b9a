package seglog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// File names: a segment is "<base offset, 20 digits>.log" and its sparse
// index is the same name with ".index".
const (
	logSuffix   = ".log"
	indexSuffix = ".index"
	baseDigits  = 20
)

// segment is one file of the log: the batches from offset base up to next.
type segment struct {
	base int64  // immutable: offset of the first batch; also the file name
	path string // immutable: the .log file
	// f is the segment file, through the node's FileCache, which may
	// close and reopen its descriptor whenever no call runs through it.
	// Immutable; closed only while Log.truncMu is held exclusively.
	f  *vfs.Handle
	fs vfs.FS // immutable: holds the segment's files

	// Guarded by Log.mu; changed only by the writer, which also holds
	// Log.wmu and may therefore read them without Log.mu.
	size int64       // published bytes: always the end of a whole batch
	next int64       // offset just past the last batch (base when empty)
	idx  offsetIndex // sparse index of the published batches

	// Guarded by Log.wmu.
	dataDirty  bool // written or truncated since the last fsync
	indexDirty bool // index file written since the last fsync

	// dropped is how much of the file Sync has dropped from the page
	// cache (Options.CacheKeepBytes); guarded by Log.syncSem.
	dropped int64
}

func segmentName(base int64, suffix string) string {
	return fmt.Sprintf("%0*d%s", baseDigits, base, suffix)
}

func (s *segment) indexPath() string {
	return strings.TrimSuffix(s.path, logSuffix) + indexSuffix
}

// parseSegmentName returns the base offset in a segment or index file name.
func parseSegmentName(name, suffix string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, suffix)
	if !ok || len(digits) != baseDigits {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil
}

// createSegment makes an empty segment file, replacing any leftover file of
// the same name (no segment in the log's list owns it).
func createSegment(files logFiles, dir string, base int64) (*segment, error) {
	fsys := files.fs
	path := filepath.Join(dir, segmentName(base, logSuffix))
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, vfs.FileMode)
	if err != nil {
		return nil, fmt.Errorf("partition: create segment: %w", err)
	}
	s := &segment{base: base, path: path, f: files.adopt(f, true), fs: fsys, next: base, dataDirty: true}
	// A leftover index of the same name would describe other bytes.
	if err := removeIfExists(fsys, s.indexPath()); err != nil {
		s.f.Close()
		return nil, err
	}
	return s, nil
}

// openSegment opens an existing segment file; its size, next and index are
// filled in by recovery.
func openSegment(files logFiles, dir string, base int64) (*segment, int64, error) {
	fsys := files.fs
	path := filepath.Join(dir, segmentName(base, logSuffix))
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("partition: open segment: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("partition: open segment: %w", err)
	}
	return &segment{base: base, path: path, f: files.adopt(f, false), fs: fsys, next: base}, fi.Size(), nil
}

// writeIndex stores the segment's index file (not fsynced; Sync does that).
// The caller is the writer and holds Log.wmu.
func (s *segment) writeIndex() error {
	data := encodeIndex(s.base, s.size, s.next, &s.idx)
	if err := vfs.WriteFile(s.fs, s.indexPath(), data, vfs.FileMode); err != nil {
		return fmt.Errorf("partition: write index: %w", err)
	}
	s.indexDirty = true
	return nil
}

// sync fsyncs, with fsync, what changed in the segment since the last
// sync. The caller holds Log.wmu.
func (s *segment) sync(fsync func(vfs.File) error) error {
	if err := s.syncParts(s.dataDirty, false, fsync); err != nil {
		return err
	}
	s.dataDirty = false
	if err := s.syncParts(false, s.indexDirty, fsync); err != nil {
		return err
	}
	s.indexDirty = false
	return nil
}

// syncParts fsyncs the data file (with the fsync the Log gave its file
// cache), the index file (with fsync), or both. It touches no flags; the
// caller holds Log.wmu or Log.truncMu (shared), either of which keeps the
// files in place.
func (s *segment) syncParts(data, index bool, fsync func(vfs.File) error) error {
	if data {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("partition: sync segment: %w", err)
		}
	}
	if index {
		if err := syncFile(s.fs, s.indexPath(), fsync); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("partition: sync index: %w", err)
		}
	}
	return nil
}

// remove closes and deletes the segment's files. The caller holds
// Log.truncMu exclusively.
func (s *segment) remove() error {
	return errors.Join(s.f.Close(), removeIfExists(s.fs, s.path), removeIfExists(s.fs, s.indexPath()))
}

// syncFile fsyncs a file by name, with fsync.
func syncFile(fsys vfs.FS, path string, fsync func(vfs.File) error) error {
	f, err := vfs.Open(fsys, path)
	if err != nil {
		return err
	}
	return errors.Join(fsync(f), f.Close())
}

func removeIfExists(fsys vfs.FS, path string) error {
	if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("partition: %w", err)
	}
	return nil
}
