package fsm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// newDir makes dir durably on a new strict MemFS (seeded unless 0).
func newDir(t *testing.T, seed uint64, dir string) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewStrictMem()
	if seed != 0 {
		mem = vfs.NewStrictMemSeeded(seed)
	}
	if err := mem.MkdirAll(dir, vfs.DirMode); err != nil {
		t.Fatal(err)
	}
	if err := mem.SyncDir(filepath.Dir(dir)); err != nil {
		t.Fatal(err)
	}
	return mem
}

func testCheckpoint(index uint64) checkpoint {
	return checkpoint{index: index, term: 1, start: 0, end: int64(index) * 10, table: []byte("table")}
}

func writeRaw(t *testing.T, fsys vfs.FS, path string, b []byte) {
	t.Helper()
	fh, err := fsys.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, vfs.FileMode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
}

func newestIndex(t *testing.T, fsys vfs.FS, dir string) (uint64, bool) {
	t.Helper()
	cp, ok, _, err := readCheckpoint(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	return cp.index, ok
}

// Checkpoints go to the two slots in turn; the newest valid one is read,
// past a slot a crash left half written; the single-file checkpoint of
// older nodes is read and removed after the next write.
func TestCheckpointSlots(t *testing.T) {
	const dir = "/d"
	mem := newDir(t, 0, dir)
	if _, ok := newestIndex(t, mem, dir); ok {
		t.Fatal("a checkpoint in an empty directory")
	}
	var s cpSlots
	for i := uint64(1); i <= 3; i++ {
		if err := s.write(mem, dir, testCheckpoint(i).encode()); err != nil {
			t.Fatal(err)
		}
	}
	mem.Crash()
	mem.Restart()
	if idx, _ := newestIndex(t, mem, dir); idx != 3 {
		t.Fatalf("after a crash: index %d, want 3", idx)
	}
	_, _, s, _ = readCheckpoint(mem, dir)
	if s.next != 1 {
		t.Fatalf("next slot %d, want 1 (slot 0 holds index 3)", s.next)
	}
	torn := testCheckpoint(4).encode()
	torn[len(torn)/2] ^= 0xff
	writeRaw(t, mem, filepath.Join(dir, cpSlotName(1)), torn)
	if idx, _ := newestIndex(t, mem, dir); idx != 3 {
		t.Fatalf("with a torn slot: index %d, want 3", idx)
	}

	writeRaw(t, mem, filepath.Join(dir, checkpointFile), testCheckpoint(5).encode())
	_, _, s, _ = readCheckpoint(mem, dir)
	if idx, _ := newestIndex(t, mem, dir); idx != 5 || !s.legacy {
		t.Fatalf("with a newer single-file checkpoint: index %d legacy %v", idx, s.legacy)
	}
	if err := s.write(mem, dir, testCheckpoint(6).encode()); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat(filepath.Join(dir, checkpointFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the single-file checkpoint after a slot write: %v", err)
	}
	if idx, _ := newestIndex(t, mem, dir); idx != 6 {
		t.Fatalf("index %d, want 6", idx)
	}
	if err := s.remove(mem, dir); err != nil {
		t.Fatal(err)
	}
	if _, ok := newestIndex(t, mem, dir); ok {
		t.Fatal("a checkpoint after remove")
	}
}

// A lone slot that fails its checksum is a first write a crash cut short:
// no checkpoint. Two that fail, or a single-file checkpoint that fails
// (never written in place), are corrupt state.
func TestCheckpointSlotsCorrupt(t *testing.T) {
	bad := []byte("not a checkpoint")
	for _, tc := range []struct {
		name    string
		files   []string
		corrupt bool
	}{
		{"one torn slot", []string{cpSlotName(0)}, false},
		{"two bad slots", []string{cpSlotName(0), cpSlotName(1)}, true},
		{"bad single file", []string{checkpointFile}, true},
	} {
		mem := newDir(t, 0, "/d")
		for _, f := range tc.files {
			writeRaw(t, mem, filepath.Join("/d", f), bad)
		}
		_, ok, _, err := readCheckpoint(mem, "/d")
		if got := errors.Is(err, ErrCorruptState); got != tc.corrupt || ok {
			t.Errorf("%s: found %v, err %v; want corrupt %v", tc.name, ok, err, tc.corrupt)
		}
	}
}

// A power loss at any operation of a run of checkpoint writes leaves the
// newest checkpoint whose write returned, or a later one, never an older
// one and never none; with crashes that keep a random part of what was not
// synced.
func TestCheckpointSlotsCrashAnywhere(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		mem := newDir(t, seed, "/d")
		mem.CrashAt(mem.Ops() + int64(1+seed%37))
		var s cpSlots
		durable := uint64(0)
		for i := uint64(1); i <= 12; i++ {
			if s.write(mem, "/d", testCheckpoint(i).encode()) != nil {
				break
			}
			durable = i
		}
		mem.Crash()
		mem.Restart()
		cp, ok, _, err := readCheckpoint(mem, "/d")
		switch {
		case err != nil:
			t.Fatalf("seed %d: %v", seed, err)
		case durable > 0 && (!ok || cp.index < durable):
			t.Fatalf("seed %d: checkpoint %d (found %v) after index %d was durable", seed, cp.index, ok, durable)
		}
	}
}

// BenchmarkCheckpointWrite stores a checkpoint durably on the real disk:
// "slots" as the FSM does, "rename" as it did before (a temporary file,
// its fsync, a rename and the directory's fsync), for the ratio.
func BenchmarkCheckpointWrite(b *testing.B) {
	data := testCheckpoint(1).encode()
	data = append(data, make([]byte, 2048)...) // a producer table's worth
	b.Run("rename", func(b *testing.B) {
		dir := b.TempDir()
		path := filepath.Join(dir, checkpointFile)
		for b.Loop() {
			tmp := path + ".tmp"
			fh, err := vfs.OS.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, vfs.FileMode)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fh.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := fh.Sync(); err != nil {
				b.Fatal(err)
			}
			fh.Close()
			if err := vfs.OS.Rename(tmp, path); err != nil {
				b.Fatal(err)
			}
			if err := vfs.OS.SyncDir(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("slots", func(b *testing.B) {
		dir := b.TempDir()
		var s cpSlots
		for b.Loop() {
			if err := s.write(vfs.OS, dir, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
