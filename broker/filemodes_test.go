package broker_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// Everything a node keeps under data_dir, the metadata's SCRAM keys
// included, is its user's alone: directories 0700, files without group or
// other bits, whatever the process umask (here the usual 022), with
// metadata and partition snapshots taken; a data_dir made looser before is
// tightened at start.
func TestDataDirModes(t *testing.T) {
	t.Parallel()
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	dataDir := filepath.Join(t.TempDir(), "node1")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.DataDir = dataDir
		for _, r := range []*struct {
			th *uint64
			iv *time.Duration
		}{
			{&cfg.MetaRaft.SnapshotThreshold, &cfg.MetaRaft.SnapshotInterval},
			{&cfg.PartitionRaft.SnapshotThreshold, &cfg.PartitionRaft.SnapshotInterval},
		} {
			*r.th, *r.iv = 1, 50*time.Millisecond
		}
	})
	cl := c.Client(t)
	createTopic(t, cl, "modes", 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "modes", Partition: int32(i % 2), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "a metadata snapshot", func() bool {
		m, _ := filepath.Glob(filepath.Join(dataDir, "meta", "snapshots", "*", "state.bin"))
		return len(m) > 0
	})
	c.StopNode(1)

	var dirs, files int
	err := filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := fi.Mode(); {
		case mode.IsDir():
			dirs++
			if mode.Perm() != 0o700 {
				t.Errorf("directory %s has mode %v, want 0700", path, mode.Perm())
			}
		default:
			files++
			if mode.Perm()&0o077 != 0 {
				t.Errorf("file %s has mode %v, want no group or other bits", path, mode.Perm())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d directories and %d files", dirs, files)
}
