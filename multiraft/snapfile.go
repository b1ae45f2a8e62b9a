package multiraft

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// snapFiles is a raft.SnapshotStore that keeps each snapshot as one file,
// dir/<term>-<index>-<seq>.snap:
//
//	state | meta (JSON raft.SnapshotMeta) | stateSize u64 | metaLen u32 |
//	stateCRC u32 | trailerCRC u32 (of meta and the three fields before it) | "MKSN"
//
// Completing one costs an fsync of the file, a rename and an fsync of the
// directory. Raft's FileSnapshotStore costs a directory, two metadata
// files, four fsyncs, a rename and a scan of the directory to reap: at
// many busy partitions, whose snapshots the log budget makes frequent,
// that was most of a snapshot's cost. Snapshots left by raft's store in
// the same directory (a data directory from an older version) are listed,
// opened and reaped as well.
type snapFiles struct {
	dir    string
	retain int
	log    *slog.Logger
	legacy *raft.FileSnapshotStore // nil: no directory of raft's store was found

	mu    sync.Mutex  // guards snaps and seq
	snaps []snapEntry // newest first
	seq   uint64      // the last sequence number used in a name
}

type snapEntry struct {
	meta   raft.SnapshotMeta
	seq    uint64
	crc    uint32 // of the state
	legacy bool   // a directory of raft's FileSnapshotStore
}

const (
	snapSuffix    = SnapshotFileSuffix
	snapTmpSuffix = SnapshotFileSuffix + ".tmp"
	snapMagic     = "MKSN"
	snapTrailer   = 8 + 4 + 4 + 4 + 4
	maxSnapMeta   = 64 << 20 // a corrupt length must not make us allocate without limit
)

// SnapshotFileSuffix ends the name of a partition group's snapshot file
// in its snapshots directory.
const SnapshotFileSuffix = ".snap"

// ErrSnapshotFileCorrupt means a snapshot file failed its checks.
var ErrSnapshotFileCorrupt = errors.New("multiraft: corrupt snapshot file")

var snapCRC = crc32.MakeTable(crc32.Castagnoli)

// openSnapFiles opens the store in dir/snapshots, removing what a crash
// left half written.
func openSnapFiles(dir string, retain int, hl hclog.Logger, log *slog.Logger) (*snapFiles, error) {
	s := &snapFiles{dir: filepath.Join(dir, "snapshots"), retain: retain, log: log}
	if err := os.MkdirAll(s.dir, dirMode); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, snapTmpSuffix), e.IsDir() && strings.HasSuffix(name, ".tmp"):
			// Ours, or raft's store's, half written when the process stopped.
			if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
				return nil, err
			}
		case strings.HasSuffix(name, snapSuffix):
			e, err := readSnapEntry(filepath.Join(s.dir, name))
			if err != nil {
				log.Warn("multiraft: skipping an unreadable snapshot", "file", name, "err", err)
				continue
			}
			s.snaps = append(s.snaps, e)
			s.seq = max(s.seq, e.seq)
		case e.IsDir() && s.legacy == nil:
			if s.legacy, err = raft.NewFileSnapshotStoreWithLogger(dir, retain, hl); err != nil {
				return nil, err
			}
		}
	}
	if s.legacy != nil {
		if err := s.adoptLegacy(); err != nil {
			return nil, err
		}
	}
	s.sortSnaps()
	return s, nil
}

// path is the file of snapshot id with suffix (snapSuffix or snapTmpSuffix).
func (s *snapFiles) path(id, suffix string) string { return filepath.Join(s.dir, id+suffix) }

// adoptLegacy lists the snapshots of raft's store beside ours.
func (s *snapFiles) adoptLegacy() error {
	if err := s.legacy.ReapSnapshots(); err != nil {
		return err
	}
	metas, err := s.legacy.List()
	if err != nil {
		return err
	}
	for _, m := range metas {
		s.snaps = append(s.snaps, snapEntry{meta: *m, legacy: true})
	}
	return nil
}

// sortSnaps orders the snapshots newest first, as raft's stores do.
func (s *snapFiles) sortSnaps() {
	slices.SortFunc(s.snaps, func(a, b snapEntry) int {
		return cmp.Or(cmp.Compare(b.meta.Term, a.meta.Term), cmp.Compare(b.meta.Index, a.meta.Index), cmp.Compare(b.seq, a.seq))
	})
}

func (s *snapFiles) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("multiraft: unsupported snapshot version %d", version)
	}
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	id := fmt.Sprintf("%d-%d-%d", term, index, seq)
	fh, err := os.OpenFile(s.path(id, snapTmpSuffix), os.O_CREATE|os.O_EXCL|os.O_WRONLY, fileMode)
	if err != nil {
		return nil, err
	}
	k := &snapSink{store: s, fh: fh, crc: crc32.New(snapCRC), seq: seq, meta: raft.SnapshotMeta{
		Version: version, ID: id, Index: index, Term: term,
		Configuration: configuration, ConfigurationIndex: configurationIndex,
	}}
	k.w = bufio.NewWriterSize(io.MultiWriter(fh, k.crc), 64<<10)
	return k, nil
}

func (s *snapFiles) List() ([]*raft.SnapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*raft.SnapshotMeta, 0, min(len(s.snaps), s.retain))
	for _, e := range s.snaps[:min(len(s.snaps), s.retain)] {
		m := e.meta
		out = append(out, &m)
	}
	return out, nil
}

// Open checks the whole state against its CRC before returning it, as
// raft's store does: a snapshot is opened to be restored or sent.
func (s *snapFiles) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	s.mu.Lock()
	i := slices.IndexFunc(s.snaps, func(e snapEntry) bool { return e.meta.ID == id })
	var e snapEntry
	if i >= 0 {
		e = s.snaps[i]
	}
	s.mu.Unlock()
	if i < 0 {
		return nil, nil, fmt.Errorf("multiraft: no snapshot %s: %w", id, os.ErrNotExist)
	}
	if e.legacy {
		return s.legacy.Open(id)
	}
	fh, err := os.Open(s.path(id, snapSuffix))
	if err != nil {
		return nil, nil, err
	}
	if err := checkSnapState(fh, e.meta.Size, e.crc); err != nil {
		fh.Close()
		return nil, nil, fmt.Errorf("multiraft: snapshot %s: %w", id, err)
	}
	m := e.meta
	return &m, snapReader{Reader: bufio.NewReaderSize(io.NewSectionReader(fh, 0, m.Size), 64<<10), fh: fh}, nil
}

type snapReader struct {
	io.Reader
	fh *os.File
}

func (r snapReader) Close() error { return r.fh.Close() }

// add records a completed snapshot and removes those past retain.
func (s *snapFiles) add(e snapEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps = append(s.snaps, e)
	s.sortSnaps()
	var errs []error
	for _, old := range s.snaps[min(len(s.snaps), s.retain):] {
		if old.legacy {
			errs = append(errs, os.RemoveAll(filepath.Join(s.dir, old.meta.ID)))
		} else if err := os.Remove(s.path(old.meta.ID, snapSuffix)); !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.snaps = s.snaps[:min(len(s.snaps), s.retain)]
	return errors.Join(errs...)
}

// snapSink writes one snapshot to its temporary file; Close completes it.
type snapSink struct {
	store  *snapFiles
	fh     *os.File
	w      *bufio.Writer
	crc    hash.Hash32
	size   int64
	seq    uint64
	meta   raft.SnapshotMeta
	closed bool
}

func (k *snapSink) ID() string { return k.meta.ID }

func (k *snapSink) Write(p []byte) (int, error) {
	n, err := k.w.Write(p)
	k.size += int64(n)
	return n, err
}

// Close appends the trailer, makes the file durable and renames it into
// place; then the snapshot exists, and older ones past retain go.
func (k *snapSink) Close() error {
	if k.closed {
		return nil
	}
	k.closed = true
	tmp := k.store.path(k.meta.ID, snapTmpSuffix)
	if err := k.finish(); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	if err := os.Rename(tmp, k.store.path(k.meta.ID, snapSuffix)); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	if err := syncDir(k.store.dir); err != nil {
		return err
	}
	if err := k.store.add(snapEntry{meta: k.meta, seq: k.seq, crc: k.crc.Sum32()}); err != nil {
		k.store.log.Warn("multiraft: could not remove an old snapshot", "err", err)
	}
	return nil
}

// finish writes the trailer, syncs and closes the temporary file.
func (k *snapSink) finish() error {
	if err := k.w.Flush(); err != nil {
		k.fh.Close()
		return err
	}
	k.meta.Size = k.size
	trailer, err := encodeSnapTrailer(k.meta, k.crc.Sum32())
	if err == nil {
		_, err = k.fh.Write(trailer)
	}
	if err == nil {
		err = k.fh.Sync()
	}
	return errors.Join(err, k.fh.Close())
}

func (k *snapSink) Cancel() error {
	if k.closed {
		return nil
	}
	k.closed = true
	return errors.Join(k.fh.Close(), os.Remove(k.store.path(k.meta.ID, snapTmpSuffix)))
}

func encodeSnapTrailer(meta raft.SnapshotMeta, stateCRC uint32) ([]byte, error) {
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint64(b, uint64(meta.Size))
	b = binary.BigEndian.AppendUint32(b, uint32(len(b)-8))
	b = binary.BigEndian.AppendUint32(b, stateCRC)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, snapCRC))
	return append(b, snapMagic...), nil
}

// readSnapEntry reads and checks a snapshot file's trailer and metadata;
// the state is checked when the snapshot is opened.
func readSnapEntry(path string) (snapEntry, error) {
	fh, err := os.Open(path)
	if err != nil {
		return snapEntry{}, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return snapEntry{}, err
	}
	if st.Size() < snapTrailer {
		return snapEntry{}, fmt.Errorf("%w: %d bytes", ErrSnapshotFileCorrupt, st.Size())
	}
	t := make([]byte, snapTrailer)
	if _, err := fh.ReadAt(t, st.Size()-snapTrailer); err != nil {
		return snapEntry{}, err
	}
	size, metaLen := int64(binary.BigEndian.Uint64(t)), int64(binary.BigEndian.Uint32(t[8:]))
	if string(t[20:]) != snapMagic || metaLen > maxSnapMeta || size < 0 || size+metaLen+snapTrailer != st.Size() {
		return snapEntry{}, fmt.Errorf("%w: trailer", ErrSnapshotFileCorrupt)
	}
	b := make([]byte, metaLen+16)
	if _, err := fh.ReadAt(b, size); err != nil {
		return snapEntry{}, err
	}
	if crc32.Checksum(b, snapCRC) != binary.BigEndian.Uint32(t[16:]) {
		return snapEntry{}, fmt.Errorf("%w: trailer checksum", ErrSnapshotFileCorrupt)
	}
	e := snapEntry{crc: binary.BigEndian.Uint32(t[12:])}
	if err := json.Unmarshal(b[:metaLen], &e.meta); err != nil {
		return snapEntry{}, fmt.Errorf("%w: %w", ErrSnapshotFileCorrupt, err)
	}
	if e.meta.Size != size {
		return snapEntry{}, fmt.Errorf("%w: size %d, trailer %d", ErrSnapshotFileCorrupt, e.meta.Size, size)
	}
	// The name is <term>-<index>-<seq>.snap.
	id := e.meta.ID
	if filepath.Base(path) != id+snapSuffix {
		return snapEntry{}, fmt.Errorf("%w: holds snapshot %s", ErrSnapshotFileCorrupt, id)
	}
	if e.seq, err = strconv.ParseUint(id[strings.LastIndexByte(id, '-')+1:], 10, 64); err != nil {
		return snapEntry{}, fmt.Errorf("%w: name %s", ErrSnapshotFileCorrupt, id)
	}
	return e, nil
}

// checkSnapState reads the state and compares its CRC with want.
func checkSnapState(fh *os.File, size int64, want uint32) error {
	crc := crc32.New(snapCRC)
	if _, err := io.Copy(crc, io.NewSectionReader(fh, 0, size)); err != nil {
		return err
	}
	if crc.Sum32() != want {
		return fmt.Errorf("%w: state checksum", ErrSnapshotFileCorrupt)
	}
	return nil
}

// ReadSnapshotFileMeta reads the metadata of one snapshot file of a
// partition group (dir/snapshots/*.snap) without opening the store, so the
// node may be running.
func ReadSnapshotFileMeta(path string) (raft.SnapshotMeta, error) {
	e, err := readSnapEntry(path)
	return e.meta, err
}
