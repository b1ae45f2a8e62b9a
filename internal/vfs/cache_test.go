package vfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// countingFS counts the descriptors open on an FS, and the most at once.
type countingFS struct {
	vfs.FS
	open, peak, opens atomic.Int64
}

func (c *countingFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	c.opens.Add(1)
	n := c.open.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	return &countedFile{File: f, fs: c}, nil
}

type countedFile struct {
	vfs.File
	fs     *countingFS
	closed atomic.Bool
}

func (f *countedFile) Close() error {
	if f.closed.CompareAndSwap(false, true) {
		f.fs.open.Add(-1)
	}
	return f.File.Close()
}

// adopt creates name on fsys and hands it to c.
func adopt(t *testing.T, c *vfs.FileCache, fsys vfs.FS, name string, o vfs.HandleOptions) *vfs.Handle {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if o.Flag == 0 {
		o.Flag = os.O_RDWR
	}
	return c.Adopt(fsys, f, o)
}

func readAll(t *testing.T, h *vfs.Handle, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := h.ReadAt(b, 0); err != nil {
		t.Fatalf("%s: %v", h.Name(), err)
	}
	return b
}

// TestFileCacheBoundsOpenFiles writes and reads 200 files through a cache
// of 10: never more than 10 descriptors are open (11 while one is being
// adopted), and every file reads back what was written to it, though each
// was closed and reopened.
func TestFileCacheBoundsOpenFiles(t *testing.T) {
	fsys := &countingFS{FS: vfs.NewStrictMem()}
	c := vfs.NewFileCache(10)
	var hs []*vfs.Handle
	for i := range 200 {
		hs = append(hs, adopt(t, c, fsys, fmt.Sprintf("/f%03d", i), vfs.HandleOptions{}))
	}
	for round := range 3 {
		for i, h := range hs {
			if _, err := h.WriteAt(fmt.Appendf(nil, "%03d-%d;", i, round), int64(6*round)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, h := range hs {
		if got, want := string(readAll(t, h, 18)), fmt.Sprintf("%03d-0;%03d-1;%03d-2;", i, i, i); got != want {
			t.Fatalf("file %d holds %q, want %q", i, got, want)
		}
	}
	// Adopt takes a file its caller opened: one over until it made room.
	if p := fsys.peak.Load(); p > 11 {
		t.Fatalf("%d descriptors were open at once, limit 10", p)
	}
	st := c.Stats()
	if st.Open != 10 || st.Reopens == 0 || st.Evictions == 0 {
		t.Fatalf("stats %+v: want 10 open after reopens and evictions", st)
	}
	for _, h := range hs {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := fsys.open.Load(); n != 0 || c.Stats().Open != 0 {
		t.Fatalf("%d descriptors (cache says %d) open after every handle closed", n, c.Stats().Open)
	}
}

// TestFileCacheSyncsDirtyFileBeforeClosing: an evicted file's writes are
// fsynced before its descriptor closes, so they survive a crash, and a
// later Sync does not reopen the file for nothing. A volatile file is
// closed without an fsync, and loses its writes at a crash.
func TestFileCacheSyncsDirtyFileBeforeClosing(t *testing.T) {
	m := vfs.NewStrictMem()
	fsys := &countingFS{FS: m}
	var fsyncs atomic.Int64
	sync := func(f vfs.File) error { fsyncs.Add(1); return f.Sync() }
	c := vfs.NewFileCache(1)
	a := adopt(t, c, fsys, "/a", vfs.HandleOptions{Fsync: sync})
	if _, err := a.WriteAt([]byte("durable"), 0); err != nil {
		t.Fatal(err)
	}
	v := adopt(t, c, fsys, "/v", vfs.HandleOptions{Volatile: true}) // evicts a
	if err := m.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	if fsyncs.Load() != 1 {
		t.Fatalf("%d fsyncs, want a's before its eviction", fsyncs.Load())
	}
	opens := fsys.opens.Load()
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	if fsys.opens.Load() != opens || fsyncs.Load() != 1 {
		t.Fatal("Sync reopened and fsynced a file whose writes its eviction had fsynced")
	}
	if _, err := v.WriteAt([]byte("lost"), 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Pin(); err != nil { // evicts v, without fsync
		t.Fatal(err)
	}
	a.Unpin()
	if st := c.Stats(); st.EvictionSyncs != 1 || st.Evictions != 2 {
		t.Fatalf("stats %+v: want 2 evictions, 1 with an fsync", st)
	}
	m.Crash()
	m.Restart()
	if got, _ := content(t, m, "/a"); got != "durable" {
		t.Fatalf("a holds %q after the crash, want the write its eviction fsynced", got)
	}
	if got, _ := content(t, m, "/v"); got != "" {
		t.Fatalf("v holds %q after the crash: its eviction fsynced a volatile file", got)
	}
}

// TestFileCacheSyncAfterReopenCoversOldWrites: writes made through a
// descriptor the cache closed are made durable by a Sync through the
// reopened one; the cache fsynced them already, and a write through the
// new descriptor is fsynced by the next Sync.
func TestFileCacheSyncAfterReopenCoversOldWrites(t *testing.T) {
	m := vfs.NewStrictMem()
	c := vfs.NewFileCache(1)
	a := adopt(t, c, m, "/a", vfs.HandleOptions{})
	b := adopt(t, c, m, "/b", vfs.HandleOptions{})
	if err := m.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	for i, h := range []*vfs.Handle{a, b, a, b} {
		if _, err := h.WriteAt([]byte{'0' + byte(i)}, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(a.Sync(), b.Sync()); err != nil {
		t.Fatal(err)
	}
	m.Crash()
	m.Restart()
	ga, _ := content(t, m, "/a")
	gb, _ := content(t, m, "/b")
	if ga != "0\x002" || gb != "\x001\x003" {
		t.Fatalf("after Sync and a crash a = %q, b = %q; want %q and %q", ga, gb, "0\x002", "\x001\x003")
	}
}

// TestFileCacheEvictionFsyncFailureIsSticky: when the fsync before an
// eviction fails, the file's next Sync fails, and so does every later one,
// even once the disk heals: the kernel may have dropped the pages.
func TestFileCacheEvictionFsyncFailureIsSticky(t *testing.T) {
	ff := vfs.Faulty(vfs.NewStrictMem())
	c := vfs.NewFileCache(1)
	a := adopt(t, c, ff, "/a", vfs.HandleOptions{})
	if _, err := a.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	ff.Fail(vfs.OpSync, syscall.EIO)
	adopt(t, c, ff, "/b", vfs.HandleOptions{}) // evicts a; its fsync fails
	ff.Heal()
	for range 2 {
		if err := a.Sync(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("Sync after a failed eviction fsync = %v, want EIO", err)
		}
	}
	if got := readAll(t, a, 1); string(got) != "x" {
		t.Fatalf("a reads %q", got)
	}
}

// TestFileCacheEvictsCleanFilesFirst: with a file with unsynced writes and
// a synced one idle, room is made by closing the synced one, which costs
// no fsync, though it was used more recently.
func TestFileCacheEvictsCleanFilesFirst(t *testing.T) {
	m := vfs.NewStrictMem()
	c := vfs.NewFileCache(2)
	dirty := adopt(t, c, m, "/dirty", vfs.HandleOptions{})
	clean := adopt(t, c, m, "/clean", vfs.HandleOptions{})
	if _, err := dirty.WriteAt([]byte("d"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := clean.WriteAt([]byte("c"), 0); err != nil {
		t.Fatal(err)
	}
	if err := clean.Sync(); err != nil {
		t.Fatal(err)
	}
	adopt(t, c, m, "/third", vfs.HandleOptions{})
	if st := c.Stats(); st.Evictions != 1 || st.EvictionSyncs != 0 {
		t.Fatalf("stats %+v: want the synced file closed, without fsync", st)
	}
	if err := dirty.Sync(); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Reopens != 0 {
		t.Fatalf("stats %+v: the file with unsynced writes was closed", st)
	}
}

// TestFileCacheKeepsPinnedFilesOpen: a pinned file is never closed; the
// cache goes over its limit while every file is in use and comes back
// under it when they are released.
func TestFileCacheKeepsPinnedFilesOpen(t *testing.T) {
	m := vfs.NewStrictMem()
	fsys := &countingFS{FS: m}
	c := vfs.NewFileCache(1)
	a := adopt(t, c, fsys, "/a", vfs.HandleOptions{})
	if err := a.Pin(); err != nil {
		t.Fatal(err)
	}
	b := adopt(t, c, fsys, "/b", vfs.HandleOptions{})
	if err := b.Pin(); err != nil {
		t.Fatal(err)
	}
	if n := fsys.open.Load(); n != 2 {
		t.Fatalf("%d descriptors open with two files pinned", n)
	}
	if _, err := a.WriteAt([]byte("a"), 0); err != nil {
		t.Fatal(err)
	}
	a.Unpin()
	b.Unpin()
	if n := fsys.open.Load(); n != 1 || c.Stats().Open != 1 {
		t.Fatalf("%d descriptors open (cache says %d) once released, limit 1", n, c.Stats().Open)
	}
	if got := readAll(t, a, 1); string(got) != "a" {
		t.Fatalf("a reads %q", got)
	}
}

// TestFileCacheReopenErrorSurfaces: a file that cannot be opened again
// fails the call that needed it with the open's error, and the cache stays
// within its limit.
func TestFileCacheReopenErrorSurfaces(t *testing.T) {
	m := vfs.NewStrictMem()
	c := vfs.NewFileCache(1)
	a := adopt(t, c, m, "/a", vfs.HandleOptions{})
	adopt(t, c, m, "/b", vfs.HandleOptions{})
	if err := m.Remove("/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ReadAt(make([]byte, 1), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read of a removed, evicted file = %v, want ErrNotExist", err)
	}
	if err := a.Pin(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Pin = %v, want ErrNotExist", err)
	}
	if n := c.Stats().Open; n > 1 {
		t.Fatalf("%d open after failed reopens, limit 1", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ReadAt(make([]byte, 1), 0); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("read after Close = %v, want ErrClosed", err)
	}
}

// TestFileCacheConcurrentUse runs readers and writers on 50 files through
// a cache of 4 (with -race): every read sees whole records, and the
// descriptors stay within the limit plus the goroutines in flight.
func TestFileCacheConcurrentUse(t *testing.T) {
	fsys := &countingFS{FS: vfs.NewStrictMem()}
	c := vfs.NewFileCache(4)
	const files, workers, rounds = 50, 8, 200
	hs := make([]*vfs.Handle, files)
	for i := range hs {
		hs[i] = adopt(t, c, fsys, fmt.Sprintf("/f%d", i), vfs.HandleOptions{})
		if _, err := hs[i].WriteAt(bytes.Repeat([]byte{byte(i)}, 8), 0); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			buf := make([]byte, 8)
			for r := range rounds {
				h := hs[(w*31+r*7)%files]
				var err error
				switch r % 3 {
				case 0:
					_, err = h.WriteAt(buf[:0], 0)
				case 1:
					err = h.Sync()
				default:
					_, err = h.ReadAt(buf, 0)
					if err == nil && !bytes.Equal(buf, bytes.Repeat(buf[:1], 8)) {
						err = fmt.Errorf("%s reads %v", h.Name(), buf)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if p := fsys.peak.Load(); p > 4+workers {
		t.Fatalf("%d descriptors open at once, limit 4 with %d workers", p, workers)
	}
	if n := c.Stats().Open; n > 4 {
		t.Fatalf("%d open when idle, limit 4", n)
	}
}

// TestFileCacheEvictsDirtyFilesInBatches: when only files with unsynced
// writes are idle, making room closes a sixteenth of the limit at once,
// fsynced together, so the next opens find room without an fsync each.
func TestFileCacheEvictsDirtyFilesInBatches(t *testing.T) {
	m := vfs.NewStrictMem()
	var fsyncs atomic.Int64
	o := vfs.HandleOptions{Fsync: func(f vfs.File) error { fsyncs.Add(1); return f.Sync() }}
	c := vfs.NewFileCache(64)
	for i := range 64 {
		h := adopt(t, c, m, fmt.Sprintf("/d%d", i), o)
		if _, err := h.WriteAt([]byte("x"), 0); err != nil {
			t.Fatal(err)
		}
	}
	adopt(t, c, m, "/new0", o)
	if st := c.Stats(); st.EvictionSyncs != 4 || st.Open != 61 || fsyncs.Load() != 4 {
		t.Fatalf("stats %+v after %d fsyncs: want 4 files fsynced and closed for one open", st, fsyncs.Load())
	}
	for i := range 3 {
		adopt(t, c, m, fmt.Sprintf("/new%d", i+1), o)
	}
	if st := c.Stats(); st.Evictions != 4 || st.Open != 64 {
		t.Fatalf("stats %+v: the next three opens should have found room", st)
	}
}
