package partition

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/partition/seglog"
)

type bufSink struct{ bytes.Buffer }

func (*bufSink) ID() string    { return "buf" }
func (*bufSink) Cancel() error { return nil }
func (*bufSink) Close() error  { return nil }

// cutReader gives n bytes, then fails as a stream cut by a crash would.
type cutReader struct {
	r io.Reader
	n int
}

var errCut = errors.New("stream cut")

func (c *cutReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errCut
	}
	p = p[:min(len(p), c.n)]
	n, err := c.r.Read(p)
	c.n -= n
	return n, err
}
func (*cutReader) Close() error { return nil }

// A follower killed while it installs the leader's snapshot: FSM.Restore
// had rewritten part of the log. On restart the replica must open (not
// refuse a checkpoint that points past its log) and, since raft starts
// from its newest snapshot without restoring it, restore that snapshot
// itself before raft starts.
func TestCrashDuringSnapshotInstall(t *testing.T) {
	open := func(dir string) (*seglog.Log, *fsm.FSM) {
		t.Helper()
		l, err := seglog.Open(filepath.Join(dir, "log"), seglog.Options{SegmentBytes: 2048})
		if err != nil {
			t.Fatal(err)
		}
		f, err := fsm.New(fsm.Config{Dir: filepath.Join(dir, "fsm")}, l)
		if err != nil {
			l.Close()
			t.Fatalf("open %s: %v", dir, err)
		}
		return l, f
	}
	var entries []*raft.Log
	for i := range 40 {
		entries = append(entries, &raft.Log{Index: uint64(i + 1), Term: 2, Type: raft.LogCommand,
			Data: fsm.EncodeProduce(idemBatch(t, 9, int32(i), "value"))})
	}
	leaderDir, followerDir := t.TempDir(), t.TempDir()
	ll, lf := open(leaderDir)
	defer ll.Close()
	defer lf.Close()
	lf.ApplyBatch(entries)
	snap, err := lf.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink bufSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	size, full, err := lf.OpenSnapshot(io.NopCloser(&sink))
	if err != nil {
		t.Fatal(err)
	}
	fullBytes, err := io.ReadAll(full)
	full.Close()
	if err != nil || int64(len(fullBytes)) != size {
		t.Fatalf("full snapshot: %d of %d bytes, %v", len(fullBytes), size, err)
	}

	// The follower held 10 entries and was stopped cleanly.
	fl, ff := open(followerDir)
	ff.ApplyBatch(entries[:10])
	ff.Close()
	fl.Close()

	// Raft stores the snapshot it receives, then calls Restore, which the
	// crash cuts a third of the way through.
	store, err := raft.NewFileSnapshotStoreWithLogger(followerDir, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := store.Create(raft.SnapshotVersionMax, 40, 2, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs.Write(fullBytes)
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	fl, ff = open(followerDir)
	if err := ff.Restore(&cutReader{r: bytes.NewReader(fullBytes), n: len(fullBytes) / 3}); !errors.Is(err, errCut) {
		t.Fatalf("restore of a cut stream: %v", err)
	}
	fl.Close() // kill -9: no Close of the FSM, the files stay as written

	fl, ff = open(followerDir) // must not fail with a corrupt durable state
	defer fl.Close()
	defer ff.Close()
	if ff.AppliedIndex() != 0 {
		t.Fatalf("after a crash mid-restore the FSM claims index %d; it must claim nothing", ff.AppliedIndex())
	}
	wrapped := &snapshotStore{SnapshotStore: store, fsm: ff}
	if err := restoreIfBehind(wrapped, ff, logging.Discard()); err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	ll.CopyTo(&a, ll.EndOffset())
	fl.CopyTo(&b, fl.EndOffset())
	if ff.AppliedIndex() != 40 || !bytes.Equal(a.Bytes(), b.Bytes()) || !bytes.Equal(snapshotBytes(t, ff), snapshotBytes(t, lf)) {
		t.Fatalf("restored follower at index %d differs from the leader", ff.AppliedIndex())
	}
	// A second start finds nothing to do.
	if err := restoreIfBehind(wrapped, ff, logging.Discard()); err != nil || ff.AppliedIndex() != 40 {
		t.Fatalf("second restoreIfBehind: %v, index %d", err, ff.AppliedIndex())
	}
}

// snapshotBytes is f's snapshot as raft would store it: its producer
// table and where its log ends.
func snapshotBytes(t *testing.T, f *fsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink bufSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

// Raft labels a snapshot with the last index its FSM goroutine handled,
// which counts entries it never hands the FSM (a new leader's no-op, a
// barrier): a snapshot taken just after an election is labelled above the
// FSM's applied index. A restart must not take that for a state behind its
// snapshot: restoring the node's own reference snapshot streams the log
// into itself, which hung a node in make jepsen.
func TestRestartAfterSnapshotLabelledPastTheFSM(t *testing.T) {
	g := newGroup(t, 1)
	value := strings.Repeat("v", 1000)
	for i := range 100 { // many segments: the stream takes many writes
		g.produce(idemBatch(t, 5, int32(i), value))
	}
	g.kill(1)
	g.start(1) // a new term: the leader appends a no-op the FSM never sees
	_, r := g.leader()
	if err := r.Settle(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.Group().Snapshot(); err != nil {
		t.Fatal(err)
	}
	g.kill(1)
	started := make(chan struct{})
	go func() {
		defer close(started)
		g.start(1)
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the replica did not open within 30s after a snapshot labelled past its FSM")
	}
	if got := g.produce(idemBatch(t, 5, 100, "c")); got != 100 {
		t.Fatalf("produce after restart at %d, want 100", got)
	}
}
