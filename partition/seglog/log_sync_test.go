package seglog

import (
	"bytes"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// A Sync that starts while another is inside its fsync must not return
// before that fsync is done: the FSM records a log end as durable once
// Sync returns. The first Sync is held in its fsync phase; synctest.Wait
// lets the second run until it blocks or returns, with no timing involved.
func TestConcurrentSyncWaitsForRunningFsync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := smallOpts()
		opts.FlushBytes = -1 // only this test's Syncs run
		inSync, release := make(chan struct{}), make(chan struct{})
		var armed atomic.Bool // the first fsync once armed (the first Sync's) is held
		opts.FS = syncHookFS{vfs.OS, func(f vfs.File) error {
			if armed.CompareAndSwap(true, false) {
				close(inSync)
				<-release
			}
			return f.Sync()
		}}
		dir := t.TempDir()
		l := openLog(t, dir, opts)
		h := makeHistory(20, 0, 11)
		appendAll(t, l, h.batches)
		armed.Store(true)

		first, second := make(chan error, 1), make(chan error, 1)
		go func() { first <- l.Sync() }()
		<-inSync
		go func() { second <- l.Sync() }()
		synctest.Wait() // the second Sync has returned or is blocked
		select {
		case err := <-second:
			close(release) // let the first finish so the bubble can end
			<-first
			t.Fatalf("second Sync returned (err %v) while the first was still before its fsync", err)
		default:
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if err := <-second; err != nil {
			t.Fatal(err)
		}
		if n := dirtySegments(l); n != 0 {
			t.Fatalf("%d segments dirty after both Syncs", n)
		}
	})
}

// After a failed fsync the kernel may have marked the lost pages clean, so
// a later fsync that succeeds proves nothing: every later Sync, write and
// Close must keep failing with ErrSyncFailed, even once the disk answers
// again, until the log is reopened; reopening recovers a valid prefix
// holding at least what the last good Sync covered.
func TestFailedFsyncIsSticky(t *testing.T) {
	opts := smallOpts()
	opts.FlushBytes = -1 // only this test's Syncs run
	injected := errors.New("injected EIO")
	var failing atomic.Bool
	opts.FS = syncHookFS{vfs.OS, func(f vfs.File) error {
		if failing.Load() {
			return injected
		}
		return f.Sync()
	}}
	dir := t.TempDir()
	l := openLog(t, dir, opts)
	h := makeHistory(30, 0, 5)
	appendAll(t, l, h.batches[:10])
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	if err := l.Append(h.batches[10]); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); !errors.Is(err, ErrSyncFailed) || !errors.Is(err, injected) {
		t.Fatalf("Sync with a failing fsync: %v, want ErrSyncFailed wrapping the injected error", err)
	}
	failing.Store(false) // the disk answers again; the loss stays unknown
	if err := l.Sync(); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("Sync after a failed fsync: %v, want ErrSyncFailed", err)
	}
	if err := l.Append(h.batches[11]); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("Append after a failed fsync: %v, want ErrSyncFailed", err)
	}
	if err := l.TruncateTo(h.end(5)); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("TruncateTo after a failed fsync: %v, want ErrSyncFailed", err)
	}
	if err := l.Reset(0); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("Reset after a failed fsync: %v, want ErrSyncFailed", err)
	}
	if err := l.Sync(); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("Sync after a failed fsync: %v, want ErrSyncFailed", err)
	}
	if err := l.Close(); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("Close after a failed fsync: %v, want ErrSyncFailed", err)
	}

	l = openLog(t, dir, smallOpts())
	got := readAll(t, l, 0, 1<<20)
	n := len(checkBatches(t, got))
	if n < 10 || !bytes.Equal(got, h.concat(0, n)) {
		t.Fatalf("reopened log holds %d batches, not a prefix of the history covering the 10 synced", n)
	}
	appendAll(t, l, h.batches[n:n+1])
	if err := l.Sync(); err != nil {
		t.Fatalf("Sync after reopen: %v", err)
	}
}

// Open trusts every segment but the last, so a roll must make the sealed
// segment's data durable before the next segment file exists.
func TestRollFsyncsSealedSegmentFirst(t *testing.T) {
	opts := smallOpts()
	opts.FlushBytes = -1 // no Sync but the roll's
	dir := t.TempDir()
	var mu sync.Mutex                // guards laterExists
	laterExists := map[string]bool{} // segment file fsynced -> a later segment existed then
	opts.FS = syncHookFS{vfs.OS, func(f vfs.File) error {
		if filepath.Ext(f.Name()) == logSuffix {
			later := false
			for _, p := range segmentFiles(t, dir) {
				later = later || p > f.Name()
			}
			mu.Lock()
			laterExists[f.Name()] = laterExists[f.Name()] || later
			mu.Unlock()
		}
		return f.Sync()
	}}
	l := openLog(t, dir, opts)
	h := makeHistory(30, 0, 3)
	for i := 0; len(segmentFiles(t, dir)) < 2; i++ {
		appendAll(t, l, h.batches[i:i+1])
	}
	sealed := segmentFiles(t, dir)[0]
	mu.Lock()
	defer mu.Unlock()
	later, synced := laterExists[sealed]
	switch {
	case !synced:
		t.Fatalf("sealed segment %s was not fsynced at the roll", filepath.Base(sealed))
	case later:
		t.Fatalf("sealed segment %s was fsynced only after the next segment was created", filepath.Base(sealed))
	}
}
