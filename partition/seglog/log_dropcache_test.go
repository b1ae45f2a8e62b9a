//go:build linux

package seglog

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Sync drops the synced segment data more than CacheKeepBytes before the
// log's end from the page cache, in sealed segments too, and keeps the
// newest bytes cached; with a negative CacheKeepBytes nothing is dropped.
func TestSyncDropsOldDataFromThePageCache(t *testing.T) {
	for _, c := range []struct {
		name      string
		keep      int64
		wantFirst bool // the first segment still cached after the Sync
	}{{"keep 1 MiB", 1 << 20, false}, {"never drop", -1, true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			skipUnlessDroppable(t, dir)
			l := openLog(t, dir, Options{SegmentBytes: 2 << 20, FlushBytes: -1, CacheKeepBytes: c.keep})
			for off := int64(0); off < 48*10; off += 10 { // 48 batches of 10 records of 10 KiB: ~4.7 MiB
				if err := l.Append(newBatch(off, 10, 10<<10, 1)); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			segs := l.Segments()
			if len(segs) < 3 {
				t.Fatalf("%d segments, want 3 or more", len(segs))
			}
			first := cachedPages(t, filepath.Join(dir, segmentName(segs[0].Base, logSuffix)))
			last := cachedPages(t, filepath.Join(dir, segmentName(segs[len(segs)-1].Base, logSuffix)))
			if (first > 0) != c.wantFirst {
				t.Errorf("first segment: %d pages cached after the Sync, want them cached: %v", first, c.wantFirst)
			}
			if last == 0 {
				t.Errorf("last segment: no page cached after the Sync; the newest bytes should stay")
			}
		})
	}
}

// skipUnlessDroppable skips the test where dir's filesystem keeps a
// synced file's pages after POSIX_FADV_DONTNEED (tmpfs, some overlays):
// there the test could not tell a Sync that drops from one that does not.
func skipUnlessDroppable(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "probe")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil || cachedPages(t, path) > 0 {
		t.Skipf("%s keeps a synced file's pages after POSIX_FADV_DONTNEED (%v)", dir, err)
	}
}

// cachedPages counts the pages of the file at path in the page cache.
func cachedPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		t.Fatalf("%s: size %v, %v", path, fi, err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	vec := make([]byte, (len(mem)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
