package multiraft

import (
	"errors"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"

	"github.com/minikafka/minikafka-go/logging"
)

// LastIndexOffline returns the last Raft log index of the group whose
// directory is groupDir, read from whichever store the directory holds,
// while no node has it open; logDir is the node's Config.LogDir, where a
// pebble group's log is. It is for tools and tests that inspect a stopped
// node's data directory.
func LastIndexOffline(groupDir, logDir string) (uint64, error) {
	kind, err := storeIn(groupDir, "")
	if err != nil {
		return 0, err
	}
	if kind != LogStorePebble {
		store, err := openLogStore(groupDir, kind, hclog.NewNullLogger())
		if err != nil {
			return 0, err
		}
		defer store.Close()
		return store.LastIndex()
	}
	m, err := readMarker(groupDir)
	if err != nil {
		return 0, err
	}
	pl, err := openPebbleLog(logDir, pebbleConfig{fs: vfs.Default, logger: logging.Discard()})
	if err != nil {
		return 0, err
	}
	if pl.id != m.db {
		return 0, errors.Join(invalid("%s belongs to another raft log store than %s", groupDir, logDir), pl.release())
	}
	last, err := newPebbleView(pl, m.group).LastIndex()
	if cerr := pl.release(); err == nil {
		err = cerr
	}
	return last, err
}
