package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/record"
)

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

// cutReader yields n bytes of r, then fails as a connection cut by a
// crash would.
type cutReader struct {
	r io.Reader
	n int
}

var errCut = errors.New("stream cut")

func (c *cutReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errCut
	}
	if len(p) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= n
	return n, err
}

func (*cutReader) Close() error { return nil }

// TestReproCrashDuringSnapshotRestore reproduces a node bug the long run
// (make e2e) hit: a follower killed -9 while it installs a snapshot from
// the leader cannot start again ("fsm: corrupt durable state: log holds
// [0, X) but the checkpoint at index I ends at Y"). FSM.Restore (full
// form) resets the log and appends the snapshot's batches before it
// writes the new checkpoint, so a crash in between leaves the previous
// checkpoint pointing past the end of the half-restored log, and recovery
// refuses to open. It is skipped unless MINIKAFKA_E2E_REPRO=1, so that
// make test stays green until package fsm is fixed; it fails until then.
func TestReproCrashDuringSnapshotRestore(t *testing.T) {
	if os.Getenv("MINIKAFKA_E2E_REPRO") != "1" {
		t.Skip("reproduction of an open fsm bug: MINIKAFKA_E2E_REPRO=1 to run")
	}
	open := func(dir string) (*partition.Log, *fsm.FSM) {
		t.Helper()
		l, err := partition.OpenLog(filepath.Join(dir, "log"), partition.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := fsm.New(fsm.Config{Dir: filepath.Join(dir, "fsm")}, l)
		if err != nil {
			l.Close()
			t.Fatalf("open replica %s: %v", dir, err)
		}
		return l, f
	}
	var entries []*raft.Log
	for i := range 20 {
		b, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone),
			[]record.Record{{Timestamp: 1, Key: []byte("k"), Value: bytes.Repeat([]byte{'v'}, 100)}})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: fsm.EncodeProduce(b)})
	}
	// The leader applied 20 entries; the follower 10, and was stopped
	// cleanly (checkpoint at index 10, log end 10).
	leaderDir, followerDir := t.TempDir(), t.TempDir()
	ll, lf := open(leaderDir)
	defer ll.Close()
	defer lf.Close()
	lf.ApplyBatch(entries)
	fl, ff := open(followerDir)
	ff.ApplyBatch(entries[:10])
	if err := ff.Close(); err != nil {
		t.Fatal(err)
	}
	fl.Close()

	// The follower starts again and is sent the leader's snapshot.
	fl, ff = open(followerDir)
	snap, err := lf.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	size, full, err := lf.OpenSnapshot(io.NopCloser(&sink))
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	// The process dies a third of the way through Restore: nothing after
	// this point runs, but what it wrote is in the files (kill -9, not a
	// power loss).
	if err := ff.Restore(&cutReader{r: full, n: int(size / 3)}); !errors.Is(err, errCut) {
		t.Fatalf("restore of a cut stream: %v", err)
	}
	fl.Close()

	// Restart: recovery must open (raft sends the snapshot again).
	fl, ff = open(followerDir)
	ff.Close()
	fl.Close()
}
