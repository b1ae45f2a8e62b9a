package vfs_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// A crash clone holds what a crash would leave; the original goes on
// with everything, unsynced changes included.
func TestMemCrashCloneLeavesTheOriginal(t *testing.T) {
	m := vfs.NewStrictMem()
	vfs.MkdirAllSync(m, "/d", 0o755)
	f := mustWrite(t, m, "/d/a", "one", true)
	m.SyncDir("/d")
	f.Write([]byte("two"))
	mustWrite(t, m, "/d/b", "unsynced entry", true)
	c := m.CrashClone()
	if got, _ := content(t, c, "/d/a"); got != "one" {
		t.Fatalf("clone: %q, want %q", got, "one")
	}
	if _, ok := content(t, c, "/d/b"); ok {
		t.Fatal("clone kept an entry its directory never synced")
	}
	if got, _ := content(t, m, "/d/a"); got != "onetwo" {
		t.Fatalf("original: %q, want %q", got, "onetwo")
	}
	if _, err := f.Write([]byte("three")); err != nil {
		t.Fatalf("the original's handle after a clone: %v", err)
	}
	mustWrite(t, c, "/d/a", "clone's own", true)
	if got, _ := content(t, m, "/d/a"); got != "onetwothree" {
		t.Fatalf("a write to the clone reached the original: %q", got)
	}
}

// CloneAt fires once, at the first operation it matches, before that
// operation takes effect.
func TestMemCloneAtFiresBeforeTheOperation(t *testing.T) {
	m := vfs.NewStrictMem()
	vfs.MkdirAllSync(m, "/d", 0o755)
	f := mustWrite(t, m, "/d/a", "one", true)
	m.SyncDir("/d")
	var images []*vfs.MemFS
	syncs := 0
	m.CloneAt(func(k vfs.Op, path string) bool {
		if k == vfs.OpSync && path == "/d/a" {
			syncs++
		}
		return syncs == 2
	}, func(c *vfs.MemFS) { images = append(images, c) })
	for _, s := range []string{"two", "three", "four"} {
		f.Write([]byte(s))
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if len(images) != 1 {
		t.Fatalf("%d images, want 1", len(images))
	}
	if got, _ := content(t, images[0], "/d/a"); got != "onetwo" {
		t.Fatalf("image at the second sync: %q, want %q", got, "onetwo")
	}
}

// A Pebble DB on a MemFS (vfs.Pebble) keeps across a crash every write it
// synced, and reopens on the same FS once closed.
func TestPebbleOnMemKeepsSyncedWrites(t *testing.T) {
	for _, seed := range []uint64{0, 1, 2} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			m := vfs.NewStrictMem()
			if seed > 0 {
				m = vfs.NewStrictMemSeeded(seed)
			}
			db := openPebble(t, m)
			for i := range 200 {
				opt := pebble.NoSync
				if i%10 == 9 {
					opt = pebble.Sync
				}
				if err := db.Set(fmt.Appendf(nil, "k%03d", i), []byte("v"), opt); err != nil {
					t.Fatal(err)
				}
			}
			c := m.CrashClone()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			checkKeys(t, openPebble(t, m), 200) // closed cleanly: everything
			checkKeys(t, openPebble(t, c), 200) // crashed after the last sync
		})
	}
}

func openPebble(t *testing.T, m *vfs.MemFS) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("/db", &pebble.Options{FS: vfs.Pebble(m), Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// checkKeys checks that db holds the first n keys, and closes it.
func checkKeys(t *testing.T, db *pebble.DB, n int) {
	t.Helper()
	defer db.Close()
	for i := range n {
		_, closer, err := db.Get(fmt.Appendf(nil, "k%03d", i))
		if errors.Is(err, pebble.ErrNotFound) {
			t.Fatalf("key %d of %d lost", i, n)
		}
		if err != nil {
			t.Fatal(err)
		}
		closer.Close()
	}
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
