package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKeepFailedLogsCopiesEveryLog: the kept directory holds every node log,
// whole, and outlives the test's own temp dir.
func TestKeepFailedLogsCopiesEveryLog(t *testing.T) {
	src := t.TempDir()
	var files []string
	for i, body := range []string{"node one\n", "node two\nmore\n"} {
		f := filepath.Join(src, "node"+string(rune('1'+i))+".log")
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	dir, err := keepFailedLogs(files)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, f := range files {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(dir, filepath.Base(f)))
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s kept as %q (%v), want %q", f, got, err, want)
		}
	}
	if rel, err := filepath.Rel(src, dir); err == nil && filepath.IsLocal(rel) {
		t.Fatalf("kept in %s, inside the test's temp dir %s", dir, src)
	}
}
