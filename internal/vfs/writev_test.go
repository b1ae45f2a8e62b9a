package vfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// WriteAtv puts its buffers one after another at the offset, on an OS file
// (one pwritev) and on a file system of ours (a WriteAt each), empty
// buffers included, and leaves the bytes around them alone.
func TestWriteAtvWritesBuffersInOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys vfs.FS
		dir  string
	}{{"os", vfs.OS, t.TempDir()}, {"mem", vfs.NewStrictMem(), "/d"}} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(tc.dir, "seg")
			if err := tc.fsys.MkdirAll(tc.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := tc.fsys.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			h := vfs.NewFileCache(0).Adopt(tc.fsys, f, vfs.HandleOptions{Flag: os.O_RDWR})
			defer h.Close()
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
}

// A refused write reports the error and no bytes written, on an OS file
// and on ours alike.
func TestWriteAtvRefusedWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys vfs.FS
		dir  string
	}{{"os", vfs.OS, t.TempDir()}, {"mem", vfs.NewStrictMem(), "/d"}} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(tc.dir, "seg")
			if err := tc.fsys.MkdirAll(tc.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if f, err := tc.fsys.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644); err != nil {
				t.Fatal(err)
			} else {
				f.Close()
			}
			f, err := tc.fsys.OpenFile(name, os.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			h := vfs.NewFileCache(0).Adopt(tc.fsys, f, vfs.HandleOptions{Flag: os.O_RDONLY})
			defer h.Close()
			if n, err := h.WriteAtv([][]byte{[]byte("head"), []byte("rest")}, 0); err == nil || n != 0 {
				t.Fatalf("WriteAtv on a read-only file = %d, %v; want 0 and an error", n, err)
			}
		})
	}
}
