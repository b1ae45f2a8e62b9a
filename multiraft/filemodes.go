package multiraft

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	ivfs "github.com/minikafka/minikafka-go/internal/vfs"
)

// The modes of what a group creates: its user's alone (internal/vfs).
const (
	dirMode  = ivfs.DirMode
	fileMode = ivfs.FileMode
)

// privateFS is Pebble's file system with dirMode for the directories and
// fileMode for the files Pebble creates (it asks for 0755 and 0666, less
// the process umask). A new file is 0666 less the umask until the chmod
// that follows, inside a directory that is already dirMode.
type privateFS struct{ vfs.FS }

var _ vfs.FS = privateFS{}

func (p privateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, category)
	return chmodNew(name, f, err)
}

func (p privateFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name, category, opts...)
	return chmodNew(name, f, err)
}

func (p privateFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, category)
	return chmodNew(newname, f, err)
}

func (p privateFS) MkdirAll(dir string, perm os.FileMode) error {
	return p.FS.MkdirAll(dir, perm&dirMode)
}

func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	if err == nil {
		if err = os.Chmod(name, fileMode); err != nil {
			err = errors.Join(err, c.Close())
		}
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// chmodNew gives the file Pebble opened as name fileMode.
func chmodNew(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(name, fileMode); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return f, nil
}

// openSnapshots opens the group's snapshot store: for an FSM that keeps
// its own state (a partition), whose snapshots are small and frequent, one
// file per snapshot (snapFiles), wrapped by the FSM; for the others
// (metadata), raft's own store.
func (g *Group) openSnapshots(hl hclog.Logger, durable DurableFSM) (raft.SnapshotStore, error) {
	if durable == nil {
		return openRaftSnapshots(g.spec.Dir, hl, g.log)
	}
	s, err := openSnapFiles(g.spec.Dir, 2, hl, g.log)
	if err != nil {
		return nil, err
	}
	return durable.WrapSnapshots(s), nil
}

// openRaftSnapshots is raft's file snapshot store in dir/snapshots, made
// dirMode before raft sees it, with every snapshot it completes given
// dirMode and fileMode: raft makes them 0755 and 0666 less the umask, and
// the metadata group's snapshots hold SCRAM keys.
func openRaftSnapshots(dir string, hl hclog.Logger, log *slog.Logger) (raft.SnapshotStore, error) {
	snapDir := filepath.Join(dir, "snapshots") // raft's name for it
	if err := os.MkdirAll(snapDir, dirMode); err != nil {
		return nil, err
	}
	if err := os.Chmod(snapDir, dirMode); err != nil {
		return nil, err
	}
	s, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hl)
	if err != nil {
		return nil, err
	}
	return privateSnapshots{SnapshotStore: s, dir: snapDir, log: log}, nil
}

// privateSnapshots tightens the modes of each snapshot once its sink
// closes: raft has then renamed it into place as dir/<id>.
type privateSnapshots struct {
	raft.SnapshotStore
	dir string
	log *slog.Logger
}

func (s privateSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return privateSink{SnapshotSink: sink, store: s}, nil
}

type privateSink struct {
	raft.SnapshotSink
	store privateSnapshots
}

// Close completes the snapshot and tightens it. The snapshot stands
// whether or not that works (its directory is dirMode), so a failure is
// only logged.
func (k privateSink) Close() error {
	if err := k.SnapshotSink.Close(); err != nil {
		return err
	}
	if err := tighten(filepath.Join(k.store.dir, k.ID())); err != nil {
		k.store.log.Warn("multiraft: could not restrict a snapshot's file modes", "snapshot", k.ID(), "err", err)
	}
	return nil
}

// tighten gives dir and what it holds dirMode and fileMode.
func tighten(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fileMode
		if d.IsDir() {
			mode = dirMode
		}
		return os.Chmod(path, mode)
	})
}
