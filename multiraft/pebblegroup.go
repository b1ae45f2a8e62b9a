package multiraft

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// pebbleLog returns the node-wide log store, opening it the first time.
func (h *Host) pebbleLog() (*pebbleLog, error) {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	if h.plog != nil {
		return h.plog, nil
	}
	if h.isClosed() {
		return nil, ErrClosed
	}
	if h.logDir == "" {
		return nil, invalid("the %q log store needs Config.LogDir", LogStorePebble)
	}
	pl, err := openPebbleLog(h.logDir, pebbleConfig{fs: h.logFS, memTable: h.logMemTable, logger: h.log})
	if err != nil {
		return nil, err
	}
	h.plog = pl
	h.walFsync = pl.db.Metrics().LogWriter.FsyncLatency
	return pl, nil
}

// WALFsyncLatency is the node-wide Pebble log store's histogram of WAL
// fsync latencies (Pebble's own, in nanoseconds), or nil before a pebble
// group has opened the store.
func (h *Host) WALFsyncLatency() prometheus.Histogram {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	return h.walFsync
}

// LogStoreErr is why the node-wide Pebble log store refuses writes now
// (its disk is full, or it failed), or nil.
func (h *Host) LogStoreErr() error {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	if h.plog == nil {
		return nil
	}
	return h.plog.Failure()
}

// LogStoreStalls is what the node-wide Pebble log store's write stalls
// cost so far (zero before a pebble group opened it).
func (h *Host) LogStoreStalls() WriteStalls {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	if h.plog == nil {
		return WriteStalls{}
	}
	return h.plog.watch.stalls()
}

// openPebbleStore opens group name's view of the node-wide log store; dir
// is the group's dir, whose marker ties it to the DB and the group.
func (h *Host) openPebbleStore(name, dir string) (logStore, error) {
	pl, err := h.pebbleLog()
	if err != nil {
		return nil, err
	}
	v, err := pl.open(name)
	if err != nil {
		return nil, err
	}
	if err := v.bind(dir); err != nil {
		_ = v.Close()
		return nil, err
	}
	return v, nil
}

// bind checks that dir's marker names this DB and group; a dir without
// one is a new group's: any keys a lost dir left under its name are
// cleared (clear writes nothing for a group with none: two range
// deletions per new group made opening 10,000 replicas quadratic in
// pebble, a fifth of a node's CPU), then the marker is written.
func (v *pebbleView) bind(dir string) error {
	m, err := readMarker(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := v.clear(); err != nil {
			return err
		}
		return writeMarker(dir, marker{db: v.pl.id, group: v.name})
	}
	if err != nil {
		return err
	}
	if m.group != v.name || m.db != v.pl.id {
		return invalid("%s holds group %q of raft log store %s, not group %q of this node's (%s): is Config.LogDir right?",
			dir, m.group, m.db, v.name, v.pl.id)
	}
	return nil
}

// RemoveState deletes the Raft state of group name, not open, whose dir
// is dir: for a pebble group its keys in the node-wide log store first
// (durably), then dir and everything in it (snapshots, the group's other
// files). It is how a deleted partition's replica is removed.
func (h *Host) RemoveState(name, dir string) error {
	if h.lookupGroup(name) != nil {
		return fmt.Errorf("multiraft: remove the state of group %q: %w", name, ErrGroupExists)
	}
	m, err := readMarker(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist): // not a pebble group
	case err != nil:
		return err
	case m.group != name:
		return invalid("%s holds group %q, not %q", dir, m.group, name)
	default:
		pl, err := h.pebbleLog()
		if err != nil {
			return err
		}
		if m.db == pl.id { // else the keys are in another DB, out of reach
			if err := pl.remove(name); err != nil {
				return err
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("multiraft: %w", err)
	}
	return nil
}

// marker is the content of a pebble group's marker file: the id of the
// DB that holds its state and the group's name.
type marker struct{ db, group string }

const markerHeader = "minikafka raft log: pebble"

// readMarker reads dir's marker; an error wrapping fs.ErrNotExist if there
// is none.
func readMarker(dir string) (marker, error) {
	path := filepath.Join(dir, pebbleMarker)
	b, err := os.ReadFile(path)
	if err != nil {
		return marker{}, fmt.Errorf("multiraft: %w", err)
	}
	var m marker
	sc := bufio.NewScanner(bytes.NewReader(b))
	for first := true; sc.Scan(); first = false {
		line := sc.Text()
		if first {
			if line != markerHeader {
				return marker{}, fmt.Errorf("multiraft: %s is not a raft log marker", path)
			}
			continue
		}
		k, val, _ := strings.Cut(line, " ")
		switch k {
		case "db":
			m.db = val
		case "group":
			m.group = val
		}
	}
	if m.db == "" || m.group == "" {
		return marker{}, fmt.Errorf("multiraft: %s lacks the db or the group", path)
	}
	return m, nil
}

// writeMarker writes dir's marker durably: to a temporary file, synced,
// renamed into place, and the rename synced.
func writeMarker(dir string, m marker) error {
	path := filepath.Join(dir, pebbleMarker)
	tmp := path + ".tmp"
	content := fmt.Sprintf("%s\ndb %s\ngroup %s\n", markerHeader, m.db, m.group)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, fileMode)
	if err != nil {
		return fmt.Errorf("multiraft: %w", err)
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("multiraft: write %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
