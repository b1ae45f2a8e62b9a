package multiraft

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// diskFull fails the writes of Pebble's WAL files with ENOSPC while it is
// on, as a full disk fails the write that needs a new block.
type diskFull struct{ on atomic.Bool }

func (d *diskFull) MaybeError(op errorfs.Op) error {
	if !d.on.Load() || filepath.Ext(op.Path) != ".log" {
		return nil
	}
	switch op.Kind {
	case errorfs.OpFileWrite, errorfs.OpFileWriteAt:
		return syscall.ENOSPC
	}
	return nil
}

func (d *diskFull) String() string { return "diskFull" }

// A full disk under four groups writing at once, with write caching off
// and on: Pebble used to panic ("fatal commit error", or while rotating
// past the failed WAL). Now every write returns ErrLogStoreFull within a
// bounded time, as do later ones at once, reads go on, and the process
// lives; once the disk has room, writes succeed again and the log holds
// everything acknowledged, without holes. Closing while the disk is full
// does not hang either.
func TestPebbleDiskFullWaitsForSpace(t *testing.T) {
	for _, caching := range []bool{false, true} {
		t.Run(fmt.Sprintf("caching=%v", caching), func(t *testing.T) { testPebbleDiskFull(t, caching, false) })
	}
}

// Closing the store while its disk is full gives up on the writes that
// wait, and on the DB, after closeFailedWait, without panicking (Pebble
// does when a write it waits for fails while it rotates its WAL). The
// abandoned DB's goroutines never end: the test runs in a child process.
func TestPebbleClosesWhileDiskFull(t *testing.T) {
	if !inChild(t) {
		return
	}
	for _, caching := range []bool{false, true} {
		t.Run(fmt.Sprintf("caching=%v", caching), func(t *testing.T) { testPebbleDiskFull(t, caching, true) })
	}
}

func testPebbleDiskFull(t *testing.T, caching, closeFull bool) {
	full := &diskFull{}
	pl, views := openViews(t, errorfs.Wrap(vfs.NewMem(), full), 4, caching)
	w := &writers{t: t, views: views, acked: make([]atomic.Uint64, len(views))}
	for g, err := range w.untilRefused(func() { full.on.Store(true) }) {
		if !errors.Is(err, ErrLogStoreFull) {
			t.Fatalf("group %d's write on a full disk: %v, want ErrLogStoreFull", g, err)
		}
	}
	if err := views[0].SetUint64([]byte("CurrentTerm"), 2); !errors.Is(err, ErrLogStoreFull) {
		t.Fatalf("a stable write on a full disk: %v, want ErrLogStoreFull", err)
	}
	if pl.Failure() == nil {
		t.Fatal("the store does not report its full disk")
	}
	for g, v := range views {
		var l raft.Log
		if err := v.GetLog(w.acked[g].Load(), &l); err != nil {
			t.Fatalf("group %d reading its last entry on a full disk: %v", g, err)
		}
	}
	if !closeFull {
		full.on.Store(false)
		waitFor(t, "the store to take writes again", func() bool {
			return views[0].StoreLogs([]*raft.Log{crashEntry(0, w.acked[0].Load()+1)}) == nil
		})
		w.acked[0].Add(1)
		if pl.Failure() != nil {
			t.Fatalf("the store still refuses: %v", pl.Failure())
		}
		w.untilRefused(func() { full.on.Store(true) }) // fill it again
		full.on.Store(false)
		for g, v := range views {
			waitFor(t, "the last write", func() bool { return v.SetUint64([]byte("CurrentTerm"), 3) == nil })
			checkPrefix(t, v, g, w.acked[g].Load())
		}
	}
	for _, v := range views {
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- pl.release() }()
	select {
	case err := <-closed:
		if err != nil && !closeFull {
			t.Fatalf("closing the store: %v", err)
		}
	case <-time.After(2 * closeFailedWait):
		t.Fatal("closing the store hangs")
	}
}

// openViews opens a log store on fs with n groups' views.
func openViews(t *testing.T, fs vfs.FS, n int, caching bool) (*pebbleLog, []*pebbleView) {
	t.Helper()
	pl, err := openPebbleLog("/raftlog", pebbleConfig{fs: fs, memTable: 1 << 20, logger: logging.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	views := make([]*pebbleView, n)
	for g := range views {
		if views[g], err = pl.open(fmt.Sprint(g)); err != nil {
			t.Fatal(err)
		}
		if caching {
			views[g].SetWriteCaching(time.Millisecond)
		}
	}
	return pl, views
}

// writers store crashEntry batches into their views, one goroutine each.
type writers struct {
	t     *testing.T
	views []*pebbleView
	acked []atomic.Uint64 // the last index each view's StoreLogs returned for
}

// untilRefused writes until every view's write fails and returns the
// errors; fill is called once every view has written 100 entries more.
func (w *writers) untilRefused(fill func()) []error {
	refused := make([]error, len(w.views))
	from := make([]uint64, len(w.views))
	var wg sync.WaitGroup
	for g, v := range w.views {
		from[g] = w.acked[g].Load()
		wg.Go(func() {
			for next := from[g] + 1; ; next++ {
				if err := v.StoreLogs([]*raft.Log{crashEntry(g, next)}); err != nil {
					refused[g] = err
					return
				}
				w.acked[g].Store(next)
			}
		})
	}
	waitFor(w.t, "writes", func() bool {
		for g := range w.acked {
			if w.acked[g].Load() < from[g]+100 {
				return false
			}
		}
		return true
	})
	fill()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		w.t.Fatal("writers still running 20s after the disk filled: a write is stuck")
	}
	return refused
}

// syncFails fails the syncs of Pebble's WAL files with EIO while on.
type syncFails struct{ on atomic.Bool }

func (d *syncFails) MaybeError(op errorfs.Op) error {
	if d.on.Load() && filepath.Ext(op.Path) == ".log" &&
		(op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo) {
		return syscall.EIO
	}
	return nil
}

func (d *syncFails) String() string { return "syncFails" }

// A failed fsync of the WAL fails the store for good, not the process:
// every write in flight and after returns ErrLogStoreFailed within a
// bounded time, reads go on, and closing gives up on the DB after
// closeFailedWait instead of hanging. The abandoned DB's goroutines
// never end, so the test runs in a child process (inChild).
func TestPebbleSyncFailureFailsTheStore(t *testing.T) {
	if !inChild(t) {
		return
	}
	fails := &syncFails{}
	fs := errorfs.Wrap(vfs.NewMem(), fails)
	pl, err := openPebbleLog("/raftlog", pebbleConfig{fs: fs, memTable: 1 << 20, logger: logging.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	var views []*pebbleView
	for g := range 4 {
		v, err := pl.open(fmt.Sprint(g))
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	var wg sync.WaitGroup
	var acked atomic.Uint64
	errs := make([]error, len(views))
	for g, v := range views {
		wg.Go(func() {
			for next := uint64(1); ; next++ {
				if err := v.StoreLogs([]*raft.Log{crashEntry(g, next)}); err != nil {
					errs[g] = err
					return
				}
				if g == 0 {
					acked.Store(next)
				}
			}
		})
	}
	waitFor(t, "writes", func() bool { return acked.Load() > 100 })
	fails.on.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("writers still running 20s after syncs began to fail")
	}
	for g, err := range errs {
		if !errors.Is(err, ErrLogStoreFailed) {
			t.Fatalf("group %d: %v, want ErrLogStoreFailed", g, err)
		}
	}
	var l raft.Log
	if err := views[0].GetLog(acked.Load(), &l); err != nil {
		t.Fatalf("reading after the failure: %v", err)
	}
	for _, v := range views {
		_ = v.Close()
	}
	if err := pl.release(); !errors.Is(err, ErrLogStoreFailed) {
		t.Fatalf("closing the failed store: %v, want ErrLogStoreFailed", err)
	}
}

// inChild reports whether the test runs in a child process of its own,
// which skips the leak check; if not, it runs the test there, fails if
// the child failed, and returns false.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(leakyChild) != "" {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), leakyChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("the child process did not run %s:\n%s", t.Name(), out)
	}
	return false
}
