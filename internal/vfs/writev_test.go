package vfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// onEachFS runs test on a file "seg" created in an OS directory and on our
// strict in-memory file system.
func onEachFS(t *testing.T, test func(t *testing.T, fsys vfs.FS, name string)) {
	for _, tc := range []struct {
		name string
		fsys vfs.FS
		dir  string
	}{{"os", vfs.OS, t.TempDir()}, {"mem", vfs.NewStrictMem(), "/d"}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fsys.MkdirAll(tc.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(tc.dir, "seg")
			f, err := tc.fsys.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			test(t, tc.fsys, name)
		})
	}
}

// handle opens name with flag as a Handle of a new cache.
func handle(t *testing.T, fsys vfs.FS, name string, flag int) *vfs.Handle {
	t.Helper()
	f, err := fsys.OpenFile(name, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := vfs.NewFileCache(0).Adopt(fsys, f, vfs.HandleOptions{Flag: flag})
	t.Cleanup(func() { h.Close() })
	return h
}

// WriteAtv puts its buffers one after another at the offset, on an OS file
// (one pwritev) and on a file system of ours (a WriteAt each), empty
// buffers included, and leaves the bytes around them alone.
func TestWriteAtvWritesBuffersInOrder(t *testing.T) {
	onEachFS(t, func(t *testing.T, fsys vfs.FS, name string) {
		h := handle(t, fsys, name, os.O_RDWR)
		big := bytes.Repeat([]byte("0123456789"), 100_000)
		bufs := [][]byte{[]byte("head"), nil, big, []byte("tail")}
		want := append(append([]byte("xx"), bytes.Join(bufs, nil)...), "yy"...)
		if _, err := h.WriteAt([]byte("xx"), 0); err != nil {
			t.Fatal(err)
		}
		n, err := h.WriteAtv(bufs, 2)
		if err != nil || n != len(want)-4 {
			t.Fatalf("WriteAtv = %d, %v; want %d", n, err, len(want)-4)
		}
		if _, err := h.WriteAt([]byte("yy"), int64(len(want)-2)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if _, err := h.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("file holds %d bytes equal %v (%v)", len(got), bytes.Equal(got, want), err)
		}
	})
}

// A refused write reports the error and no bytes written, on an OS file
// and on ours alike.
func TestWriteAtvRefusedWritesNothing(t *testing.T) {
	onEachFS(t, func(t *testing.T, fsys vfs.FS, name string) {
		h := handle(t, fsys, name, os.O_RDONLY)
		if n, err := h.WriteAtv([][]byte{[]byte("head"), []byte("rest")}, 0); err == nil || n != 0 {
			t.Fatalf("WriteAtv on a read-only file = %d, %v; want 0 and an error", n, err)
		}
	})
}
