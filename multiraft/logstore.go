package multiraft

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"go.etcd.io/bbolt"
)

// LogStore names the store that keeps a group's Raft log and its stable
// state (term, vote).
type LogStore string

const (
	// LogStoreBoltDB is raft-boltdb: one bbolt file, raft.db, in the
	// group's dir. The zero LogStore means it.
	LogStoreBoltDB LogStore = "boltdb"
	// LogStoreWAL is raft-wal: segment files and a small bbolt file for
	// its metadata and the stable state, in the subdirectory wal/ of the
	// group's dir.
	LogStoreWAL LogStore = "wal"
	// LogStorePebble is the node-wide Pebble DB in Config.LogDir, shared by
	// every pebble group of the Host (whose concurrent commits share
	// fsyncs); the group's dir holds only a marker file, raftlog.pebble.
	// It is the one store with write caching (Group.SetWriteCaching).
	LogStorePebble LogStore = "pebble"
)

// ParseLogStore returns the LogStore that s names ("boltdb", "wal" or
// "pebble"), or an error wrapping ErrInvalidConfig.
func ParseLogStore(s string) (LogStore, error) {
	switch l := LogStore(s); l {
	case LogStoreBoltDB, LogStoreWAL, LogStorePebble:
		return l, nil
	}
	return "", invalid("log store %q is not %q, %q or %q", s, LogStoreBoltDB, LogStoreWAL, LogStorePebble)
}

const (
	boltFile     = "raft.db"        // LogStoreBoltDB's file in a group's dir
	walDir       = "wal"            // LogStoreWAL's subdirectory of a group's dir
	pebbleMarker = "raftlog.pebble" // LogStorePebble's marker file in a group's dir
	// walSegmentSize is the size of each raft-wal segment file, which is
	// preallocated when created: one per group is open for writing, so it
	// bounds the disk a node reserves per partition (raft-wal's default
	// is 64 MiB).
	walSegmentSize = 8 << 20
)

// logStore is what a group keeps its Raft log and stable state in.
type logStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

var (
	_ logStore = (*raftboltdb.BoltStore)(nil)
	_ logStore = walStore{}
)

// storeFiles names each store by the file or dir it leaves in a group's
// dir, in the order storeIn looks for them.
var storeFiles = []struct {
	kind LogStore
	name string
}{{LogStoreBoltDB, boltFile}, {LogStoreWAL, walDir}, {LogStorePebble, pebbleMarker}}

// storeIn returns the store a group in dir uses: the one whose files dir
// already holds (raft.db first), whatever want says, so that an existing
// data directory keeps its store; otherwise want ("" means boltdb).
func storeIn(dir string, want LogStore) (LogStore, error) {
	for _, f := range storeFiles {
		if _, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
			return f.kind, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("multiraft: %w", err)
		}
	}
	if want == "" {
		return LogStoreBoltDB, nil
	}
	return want, nil
}

// openLogStore opens the store of kind, boltdb or wal, in the group dir
// dir (pebble's is Host.openPebbleStore).
func openLogStore(dir string, kind LogStore, hl hclog.Logger) (logStore, error) {
	if kind == LogStoreWAL {
		return openWAL(filepath.Join(dir, walDir), hl)
	}
	path := filepath.Join(dir, boltFile)
	store, err := raftboltdb.New(raftboltdb.Options{
		Path: path,
		// A zero timeout blocks forever on a file another process holds.
		BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return nil, fmt.Errorf("multiraft: open %s: %w", path, err)
	}
	return store, nil
}

// walStore is a raft-wal WAL with the metadata store it was opened with:
// WAL.Close leaves that store's file open, so Close closes it too.
type walStore struct {
	*wal.WAL
	meta *metadb.BoltMetaDB
}

func openWAL(dir string, hl hclog.Logger) (walStore, error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return walStore{}, fmt.Errorf("multiraft: %w", err)
	}
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithLogger(hl.Named("wal")),
		wal.WithSegmentSize(walSegmentSize))
	if err != nil {
		_ = meta.Close()
		return walStore{}, fmt.Errorf("multiraft: open %s: %w", dir, err)
	}
	return walStore{WAL: w, meta: meta}, nil
}

// GetLog is the WAL's GetLog but refuses, as raft.ErrLogNotFound, an index
// below FirstIndex: raft-wal deletes only whole segments and still serves
// a head-truncated entry from the segment it is in, where raft expects a
// compacted entry to be gone (a follower that far behind then gets a
// snapshot, as with raft-boltdb).
func (s walStore) GetLog(index uint64, l *raft.Log) error {
	first, err := s.FirstIndex()
	if err != nil {
		return err
	}
	if index < first {
		return raft.ErrLogNotFound
	}
	return s.WAL.GetLog(index, l)
}

// Close closes the WAL's segment files and its metadata file.
func (s walStore) Close() error {
	err := s.WAL.Close()
	if merr := s.meta.Close(); err == nil {
		err = merr
	}
	return err
}

// writeCacher is a logStore that can acknowledge entries before they are
// fsynced (write caching): with flush > 0 its StoreLogs returns once the
// entries are handed to the OS (for pebble, to its WAL writer, which
// writes them to the OS at once), and it fsyncs them within flush; with
// flush 0 every StoreLogs is durable when it returns.
type writeCacher interface {
	SetWriteCaching(flush time.Duration)
}
