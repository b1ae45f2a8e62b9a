package vfs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

func mustWrite(t *testing.T, fsys vfs.FS, name, data string, sync bool) vfs.File {
	t.Helper()
	f, err := vfs.Create(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func content(t *testing.T, fsys vfs.FS, name string) (string, bool) {
	t.Helper()
	b, err := vfs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func crash(m *vfs.MemFS) { m.Crash(); m.Restart() }

func TestMemDurability(t *testing.T) {
	cases := []struct {
		name  string
		run   func(t *testing.T, m *vfs.MemFS)
		file  string
		want  string
		exist bool
	}{
		{"synced file in synced dir survives", func(t *testing.T, m *vfs.MemFS) {
			mustWrite(t, m, "/d/a", "hello", true)
			m.SyncDir("/d")
		}, "/d/a", "hello", true},
		{"file in unsynced dir is lost", func(t *testing.T, m *vfs.MemFS) {
			mustWrite(t, m, "/d/a", "hello", true)
		}, "/d/a", "", false},
		{"unsynced write is lost", func(t *testing.T, m *vfs.MemFS) {
			f := mustWrite(t, m, "/d/a", "hello", true)
			m.SyncDir("/d")
			f.Write([]byte(" world"))
		}, "/d/a", "hello", true},
		{"truncate without sync is lost", func(t *testing.T, m *vfs.MemFS) {
			f := mustWrite(t, m, "/d/a", "hello", true)
			m.SyncDir("/d")
			f.Truncate(2)
		}, "/d/a", "hello", true},
		{"rename without SyncDir is lost", func(t *testing.T, m *vfs.MemFS) {
			mustWrite(t, m, "/d/a", "old", true)
			m.SyncDir("/d")
			mustWrite(t, m, "/d/a.tmp", "new", true)
			m.Rename("/d/a.tmp", "/d/a")
		}, "/d/a", "old", true},
		{"rename with SyncDir survives", func(t *testing.T, m *vfs.MemFS) {
			mustWrite(t, m, "/d/a", "old", true)
			m.SyncDir("/d")
			mustWrite(t, m, "/d/a.tmp", "new", true)
			m.Rename("/d/a.tmp", "/d/a")
			m.SyncDir("/d")
		}, "/d/a", "new", true},
		{"remove without SyncDir is lost", func(t *testing.T, m *vfs.MemFS) {
			mustWrite(t, m, "/d/a", "x", true)
			m.SyncDir("/d")
			m.Remove("/d/a")
		}, "/d/a", "x", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := vfs.NewStrictMem()
			if err := vfs.MkdirAllSync(m, "/d", 0o755); err != nil {
				t.Fatal(err)
			}
			tc.run(t, m)
			crash(m)
			got, ok := content(t, m, tc.file)
			if ok != tc.exist || got != tc.want {
				t.Fatalf("after crash: %q (exists %v), want %q (exists %v)", got, ok, tc.want, tc.exist)
			}
		})
	}
}

func TestMemMkdirAllNeedsParentSync(t *testing.T) {
	m := vfs.NewStrictMem()
	if err := m.MkdirAll("/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, "/a/b/f", "x", true)
	m.SyncDir("/a/b")
	crash(m)
	if _, err := m.Stat("/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unsynced directory survived a crash: %v", err)
	}
	if err := vfs.MkdirAllSync(m, "/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, "/a/b/f", "x", true)
	m.SyncDir("/a/b")
	crash(m)
	if got, ok := content(t, m, "/a/b/f"); !ok || got != "x" {
		t.Fatalf("after MkdirAllSync: %q %v", got, ok)
	}
}

func TestMemCrashAtFailsEverythingAfter(t *testing.T) {
	m := vfs.NewStrictMem()
	vfs.MkdirAllSync(m, "/d", 0o755)
	f := mustWrite(t, m, "/d/a", "one", true)
	m.SyncDir("/d")
	m.CrashAt(m.Ops() + 2) // the write below goes through, the Sync dies
	if _, err := f.Write([]byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) || !m.Crashed() {
		t.Fatalf("Sync at the crash point: %v (crashed %v), want EIO", err, m.Crashed())
	}
	if _, err := m.OpenFile("/d/b", os.O_CREATE|os.O_RDWR, 0o644); !errors.Is(err, syscall.EIO) {
		t.Fatalf("create after the crash: %v, want EIO", err)
	}
	m.Restart()
	if _, err := f.Write([]byte("x")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write through a handle from before the crash: %v, want EIO", err)
	}
	if got, _ := content(t, m, "/d/a"); got != "one" {
		t.Fatalf("after crash: %q, want %q", got, "one")
	}
}

// A seeded crash keeps a prefix of the unsynced writes, the last possibly
// torn: the file is always a prefix of what was written.
func TestMemSeededCrashKeepsPrefix(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789"), 10)
	lengths := map[int]bool{}
	for seed := range uint64(200) {
		m := vfs.NewStrictMemSeeded(seed)
		vfs.MkdirAllSync(m, "/d", 0o755)
		f := mustWrite(t, m, "/d/a", string(want[:10]), true)
		m.SyncDir("/d")
		for i := 10; i < len(want); i += 10 {
			f.Write(want[i : i+10])
		}
		crash(m)
		got, _ := content(t, m, "/d/a")
		if len(got) < 10 || !bytes.HasPrefix(want, []byte(got)) {
			t.Fatalf("seed %d: %q is not a prefix covering the synced bytes", seed, got)
		}
		lengths[len(got)] = true
	}
	if len(lengths) < 20 {
		t.Fatalf("seeded crashes gave only %d distinct lengths", len(lengths))
	}
}

func TestFaultyFailsAndHeals(t *testing.T) {
	for _, base := range []struct {
		name string
		fs   func(t *testing.T) (vfs.FS, string)
	}{
		{"os", func(t *testing.T) (vfs.FS, string) { return vfs.OS, t.TempDir() }},
		{"mem", func(t *testing.T) (vfs.FS, string) { return vfs.NewStrictMem(), "/d" }},
	} {
		t.Run(base.name, func(t *testing.T) {
			inner, dir := base.fs(t)
			ff := vfs.Faulty(inner)
			if err := ff.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(dir, "a")
			f := mustWrite(t, ff, name, "ok", true)
			defer f.Close()
			ff.Fail(vfs.OpFull, syscall.ENOSPC)
			n, err := f.Write([]byte("abcd"))
			var pe *fs.PathError
			if !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &pe) || n != 2 {
				t.Fatalf("write on a full disk: %d, %v; want 2 bytes and a *fs.PathError wrapping ENOSPC", n, err)
			}
			if err := f.Sync(); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("sync: %v", err)
			}
			if _, err := vfs.Create(ff, filepath.Join(dir, "b")); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("create: %v", err)
			}
			if got, _ := content(t, ff, name); got != "okab" {
				t.Fatalf("reads go on: %q", got)
			}
			ff.Heal()
			if _, err := f.Write([]byte("cd")); err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			if ff.Failures() != 3 {
				t.Fatalf("%d failures counted, want 3", ff.Failures())
			}
		})
	}
}

func TestOSRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x", "y")
	if err := vfs.MkdirAllSync(vfs.OS, dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFile(vfs.OS, filepath.Join(dir, "f"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := vfs.OS.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	ents, err := vfs.OS.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "f" {
		t.Fatalf("ReadDir: %v %v", ents, err)
	}
	if got, _ := content(t, vfs.OS, filepath.Join(dir, "f")); got != "hi" {
		t.Fatalf("ReadFile: %q", got)
	}
	if _, err := vfs.Open(vfs.OS, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open missing: %v", err)
	}
}
