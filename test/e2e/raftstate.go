package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/minikafka/minikafka-go/multiraft"
)

// RaftLastIndex reads the last Raft log index of a replica offline, from
// whichever log store its directory uses (raft.db, wal/, or the node's
// shared pebble store in <dataDir>/raftlog). The node must not be running:
// a running node holds the stores' locks.
func RaftLastIndex(dataDir, replicaDir string) (uint64, error) {
	return multiraft.LastIndexOffline(replicaDir, filepath.Join(dataDir, "raftlog"))
}

// NewestSnapshotIndex returns the Raft index of the newest complete
// snapshot in <replicaDir>/snapshots (0 if there is none): one file per
// snapshot, or a directory of raft's store from an older version. It reads
// only their metadata, so the node may be running.
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
		if strings.HasSuffix(e.Name(), multiraft.SnapshotFileSuffix) {
			meta, err := multiraft.ReadSnapshotFileMeta(filepath.Join(replicaDir, "snapshots", e.Name()))
			if err == nil {
				newest = max(newest, meta.Index)
			} else if !errors.Is(err, os.ErrNotExist) {
				return 0, fmt.Errorf("e2e: snapshot %s: %w", e.Name(), err)
			}
			continue
		}
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
