package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// openFilesUnder counts this process's descriptors open on files under
// dir, from /proc/self/fd.
func openFilesUnder(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// TestLogsShareFileLimit runs 60 logs of many small segments through one
// FileCache of 8: appends interleaved across the logs, reads, CopyTo,
// time lookups, truncation, a close and a reopen (recovery). At every
// check the process holds at most 8 descriptors on the logs' files, and
// every log reads back its history byte for byte. Without the limit the
// same logs hold one descriptor per segment.
func TestLogsShareFileLimit(t *testing.T) {
	const logs, limit = 60, 8
	root := t.TempDir()
	files := vfs.NewFileCache(limit)
	opts := smallOpts()
	opts.Files = files
	hs := make([]*history, logs)
	ls := make([]*Log, logs)
	for i := range ls {
		hs[i] = makeHistory(40, 0, uint64(i))
		ls[i] = openLog(t, filepath.Join(root, fmt.Sprint(i)), opts)
	}
	checkFDs := func(when string) {
		t.Helper()
		if n := openFilesUnder(t, root); n > limit {
			t.Fatalf("%s: %d descriptors open on the logs' files, limit %d", when, n, limit)
		}
	}
	for b := range 40 {
		for i, l := range ls {
			if err := l.Append(hs[i].batches[b]); err != nil {
				t.Fatalf("log %d batch %d: %v", i, b, err)
			}
		}
	}
	checkFDs("after the appends")
	if segs := len(ls[0].Segments()); segs < 3 {
		t.Fatalf("a log has %d segments; the test wants several", segs)
	}
	check := func(when string) {
		t.Helper()
		for i, l := range ls {
			if got := readAll(t, l, l.StartOffset(), 700); !bytes.Equal(got, hs[i].concat(0, len(hs[i].batches))) {
				t.Fatalf("%s: log %d reads other bytes than its history", when, i)
			}
			var buf bytes.Buffer
			if _, err := l.CopyTo(&buf, l.EndOffset()); err != nil || !bytes.Equal(buf.Bytes(), hs[i].concat(0, len(hs[i].batches))) {
				t.Fatalf("%s: log %d CopyTo: %v, or other bytes", when, i, err)
			}
			if off, _, ok := l.OffsetForTimestamp(0); !ok || off != 0 {
				t.Fatalf("%s: log %d OffsetForTimestamp(0) = %d, %v", when, i, off, ok)
			}
		}
		checkFDs(when)
	}
	check("after reading")
	for i, l := range ls {
		if err := l.TruncateTo(hs[i].end(30)); err != nil {
			t.Fatal(err)
		}
		hs[i].batches = hs[i].batches[:30]
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	check("after truncating and syncing")
	for i, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		ls[i] = openLog(t, filepath.Join(root, fmt.Sprint(i)), opts)
	}
	check("after reopening")
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := openFilesUnder(t, root); n != 0 || files.Stats().Open != 0 {
		t.Fatalf("%d descriptors (cache: %d) open after every log closed", n, files.Stats().Open)
	}
	if st := files.Stats(); st.Reopens == 0 {
		t.Fatalf("stats %+v: no file was ever reopened", st)
	}
}

// TestLogSyncFailsAfterEvictionFsyncFailed: when the cache fsyncs a log's
// segment to close it and that fsync fails, the log's next Sync fails
// with ErrSyncFailed, as if its own fsync had, and stays failed.
func TestLogSyncFailsAfterEvictionFsyncFailed(t *testing.T) {
	ff := vfs.Faulty(vfs.NewStrictMem())
	opts := smallOpts()
	opts.FS, opts.Files, opts.FlushBytes = ff, vfs.NewFileCache(1), -1
	a := openLog(t, "/a", opts)
	b := openLog(t, "/b", opts)
	ha, hb := makeHistory(4, 0, 1), makeHistory(4, 0, 2)
	appendAll(t, a, ha.batches[:1])
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	appendAll(t, a, ha.batches[1:2]) // unsynced
	ff.Fail(vfs.OpSync, syscall.EIO)
	appendAll(t, b, hb.batches[:1]) // closes a's segment, whose fsync fails
	ff.Heal()
	if st := opts.Files.Stats(); st.EvictionSyncs == 0 {
		t.Fatalf("stats %+v: a's segment was not fsynced to be closed", st)
	}
	for range 2 {
		if err := a.Sync(); !errors.Is(err, ErrSyncFailed) || !errors.Is(err, syscall.EIO) {
			t.Fatalf("a.Sync = %v, want ErrSyncFailed wrapping EIO", err)
		}
	}
	if err := a.Append(ha.batches[2]); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("a.Append after the failed fsync = %v, want ErrSyncFailed", err)
	}
	if err := b.Sync(); err != nil {
		t.Fatalf("b.Sync = %v; only a's file failed", err)
	}
	if err := a.Close(); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("a.Close = %v, want ErrSyncFailed", err)
	}
}

// failOpenFS fails opens of existing files (reopens) while fail is set.
type failOpenFS struct {
	vfs.FS
	fail atomic.Bool
}

func (f *failOpenFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if flag&os.O_CREATE == 0 && f.fail.Load() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return f.FS.OpenFile(name, flag, perm)
}

// TestLogAppendAfterFailedReopen: an append whose segment file cannot be
// opened again fails with that error and writes nothing; once opens work
// again the same append succeeds, and reads fail and recover alike.
func TestLogAppendAfterFailedReopen(t *testing.T) {
	fsys := &failOpenFS{FS: vfs.NewStrictMem()}
	opts := smallOpts()
	opts.FS, opts.Files = fsys, vfs.NewFileCache(1)
	a := openLog(t, "/a", opts)
	b := openLog(t, "/b", opts)
	h := makeHistory(3, 0, 3)
	appendAll(t, a, h.batches[:1])
	appendAll(t, b, makeHistory(1, 0, 4).batches) // closes a's segment
	fsys.fail.Store(true)
	if err := a.Append(h.batches[1]); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Append with its file not reopening = %v, want EMFILE", err)
	}
	if _, err := a.Read(0, 1<<20); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Read with its file not reopening = %v, want EMFILE", err)
	}
	fsys.fail.Store(false)
	appendAll(t, a, h.batches[1:])
	if got := readAll(t, a, 0, 1<<20); !bytes.Equal(got, h.concat(0, 3)) {
		t.Fatal("the log reads other bytes than its history after the failed reopen")
	}
}
