package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClusterDirKeepsWhenAsked(t *testing.T) {
	keep := t.TempDir()
	t.Setenv("MINIKAFKA_E2E_KEEP_DIR", keep)
	dir, err := clusterDir(t)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != keep || !strings.HasPrefix(filepath.Base(dir), "TestClusterDirKeepsWhenAsked-") {
		t.Fatalf("clusterDir = %s; want a directory named after the test in %s", dir, keep)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("clusterDir did not create %s: %v", dir, err)
	}

	t.Setenv("MINIKAFKA_E2E_KEEP_DIR", filepath.Join(keep, "missing", "deeper"))
	if _, err := clusterDir(t); err == nil {
		t.Fatal("clusterDir in a directory that does not exist: no error")
	}

	t.Setenv("MINIKAFKA_E2E_KEEP_DIR", "")
	if dir, err := clusterDir(t); err != nil || strings.HasPrefix(dir, keep) {
		t.Fatalf("clusterDir without the variable = %s, %v; want a fresh temporary directory", dir, err)
	}
}
