package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"go.etcd.io/bbolt"
)

// RaftLastIndex reads the last Raft log index of a replica offline, from
// <replicaDir>/raft.db opened read-only, or, if there is none, from the
// raft-wal log in <replicaDir>/wal (raft.log_store: wal). The node must not
// be running: a running node holds the files' locks; raft.db's open then
// fails after a second, the WAL's blocks.
func RaftLastIndex(replicaDir string) (uint64, error) {
	if _, err := os.Stat(filepath.Join(replicaDir, "raft.db")); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(replicaDir, "wal")); err == nil {
			return walLastIndex(filepath.Join(replicaDir, "wal"))
		}
	}
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(replicaDir, "raft.db"),
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: time.Second},
	})
	if err != nil {
		return 0, fmt.Errorf("e2e: open raft.db of %s: %w", replicaDir, err)
	}
	defer store.Close()
	return store.LastIndex()
}

// walLastIndex opens the raft-wal log in dir, which must not be in use,
// and returns its last index. WAL.Close leaves the metadata file open, so
// it is closed here.
func walLastIndex(dir string) (uint64, error) {
	meta := &metadb.BoltMetaDB{}
	defer meta.Close()
	w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithLogger(hclog.NewNullLogger()))
	if err != nil {
		return 0, fmt.Errorf("e2e: open %s: %w", dir, err)
	}
	defer w.Close()
	return w.LastIndex()
}

// NewestSnapshotIndex returns the Raft index of the newest complete
// snapshot in <replicaDir>/snapshots (0 if there is none). It reads only
// the snapshots' meta.json files, so the node may be running.
func NewestSnapshotIndex(replicaDir string) (uint64, error) {
	entries, err := os.ReadDir(filepath.Join(replicaDir, "snapshots"))
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var newest uint64
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue // being written
		}
		b, err := os.ReadFile(filepath.Join(replicaDir, "snapshots", e.Name(), "meta.json"))
		if err != nil {
			continue // removed while we looked (raft keeps only the newest)
		}
		var meta struct{ Index uint64 }
		if err := json.Unmarshal(b, &meta); err != nil {
			return 0, fmt.Errorf("e2e: snapshot %s: %w", e.Name(), err)
		}
		newest = max(newest, meta.Index)
	}
	return newest, nil
}
