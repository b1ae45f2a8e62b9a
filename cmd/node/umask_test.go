//go:build unix

package main

import (
	"bytes"
	"syscall"
	"testing"
)

// The binary creates nothing that its user's group or others may read,
// whatever umask it was started with.
func TestRunRestrictsUmask(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	if code := run([]string{"--help"}, env(), &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	if got := syscall.Umask(0o022); got != 0o077 {
		t.Fatalf("umask %#o after run, want 0077", got)
	}
}
