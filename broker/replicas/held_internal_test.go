package replicas

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/metadata"
)

// infoReads is a file system that counts the replica.json files opened.
type infoReads struct {
	vfs.FS
	n atomic.Int64
}

func (f *infoReads) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if strings.HasSuffix(name, "replica.json") {
		f.n.Add(1)
	}
	return f.FS.OpenFile(name, flag, perm)
}

// HeldTopicIDs names the topics of the replicas the node runs, of those it
// is removing and of any other replica directory on disk, and reads the
// replica.json only of the last: the controller asks every
// MetaDutyInterval while a deleted topic is unreported, and reading all of
// them was half a node's CPU while it removed 10,000 replicas.
func TestHeldTopicIDsReadsOnlyUnknownDirectories(t *testing.T) {
	fsys := &infoReads{FS: vfs.OS}
	s := New[struct{}](context.Background(), Config{Dir: t.TempDir(), FS: fsys}, Deps[struct{}]{})
	running, removing, leftover := metadata.TopicID{1}, metadata.TopicID{2}, metadata.TopicID{3}
	write := func(topic string, p int32, id metadata.TopicID) {
		t.Helper()
		dir := filepath.Join(s.cfg.Dir, DirName(topic, p))
		if err := fsys.MkdirAll(dir, vfs.DirMode); err != nil {
			t.Fatal(err)
		}
		if err := writeInfo(fsys, dir, Info{Topic: topic, TopicID: id.String(), Partition: p}); err != nil {
			t.Fatal(err)
		}
	}
	for p := range int32(50) {
		write("run", p, running)
		s.reps[tp{"run", p}] = &Replica[struct{}]{info: Info{Topic: "run", Partition: p}, id: running}
	}
	write("gone", 0, removing)
	s.removing[DirName("gone", 0)] = removing
	write("left", 0, leftover)
	fsys.n.Store(0)

	held, err := s.HeldTopicIDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []metadata.TopicID{running, removing, leftover} {
		if !held[id] {
			t.Errorf("HeldTopicIDs = %v; misses %v", held, id)
		}
	}
	if len(held) != 3 {
		t.Errorf("HeldTopicIDs = %v; want 3 topics", held)
	}
	if n := fsys.n.Load(); n != 1 {
		t.Errorf("HeldTopicIDs read %d replica.json files; want 1 (the directory of no running or removed replica)", n)
	}
}
