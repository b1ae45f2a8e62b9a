package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPeakRSS reads the peak RSS of a running process at the end, of a
// killed one from just before its kill, and says so for a process that
// is gone.
func TestPeakRSS(t *testing.T) {
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	p := newPeakRSS([]int{os.Getpid(), victim.Process.Pid, gone.Process.Pid})
	p.noteBeforeKill(1)
	before := p.bytes[1]
	if err := victim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	lines := p.report()
	if p.bytes[0] < 1<<20 || !strings.HasPrefix(lines[0], "node 1 (pid ") || strings.Contains(lines[0], "unknown") {
		t.Errorf("running process: %d bytes, %q", p.bytes[0], lines[0])
	}
	if before == 0 || p.bytes[1] != before || !strings.Contains(lines[1], "read just before its SIGKILL") {
		t.Errorf("killed process: %d bytes before the kill, %d after, %q", before, p.bytes[1], lines[1])
	}
	if p.bytes[2] != 0 || !strings.Contains(lines[2], "not running: unknown") {
		t.Errorf("gone process: %d bytes, %q", p.bytes[2], lines[2])
	}
}
