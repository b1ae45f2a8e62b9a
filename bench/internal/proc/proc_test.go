package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A real line's shape, with a comm holding ") (" to trip naive parsers.
	line := "4242 (weird ) (name) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 12 0 100 0 0\n"
	got, err := ParseStatCPU([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if got != 3.25 {
		t.Fatalf("cpu = %v, want 3.25 (325 ticks)", got)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 ten 12"} {
		if _, err := ParseStatCPU([]byte(bad)); !errors.Is(err, ErrBadStat) {
			t.Errorf("%q: err %v, want ErrBadStat", bad, err)
		}
	}
}

func TestParseMachineBusy(t *testing.T) {
	stat := "cpu  100 5 50 9999 7777 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
	got, err := ParseMachineBusy([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if got != 1.61 { // (100+5+50+3+2+1) ticks: idle and iowait excluded
		t.Fatalf("busy = %v, want 1.61", got)
	}
	if _, err := ParseMachineBusy([]byte("intr 1 2 3\n")); !errors.Is(err, ErrBadStat) {
		t.Fatalf("err %v, want ErrBadStat", err)
	}
	if _, err := MachineBusySeconds(); err != nil {
		t.Fatal(err)
	}
}

// A busy child shows CPU time in /proc, and Stop ends it.
func TestCPUOfChildAndStop(t *testing.T) {
	dir := t.TempDir()
	p, err := Start("spin", dir, filepath.Join(dir, "log"), "/bin/sh", "-c", "echo hello; while :; do :; done")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	var cpu float64
	for time.Now().Before(deadline) {
		if cpu, err = CPUSeconds(p.PID()); err != nil {
			t.Fatal(err)
		}
		if cpu >= 0.05 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if cpu < 0.05 {
		t.Fatalf("busy child used %v CPU seconds", cpu)
	}
	if err := p.Stop(context.Background(), 2*time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if ok, _ := p.Exited(); !ok {
		t.Fatal("not exited after Stop")
	}
	if _, err := CPUSeconds(p.PID()); err == nil {
		t.Fatal("CPU of a reaped process should fail")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	if !strings.Contains(string(b), "hello") {
		t.Fatalf("log %q lacks the child's output", b)
	}
}

// A child that ignores SIGTERM is killed after the grace period.
func TestStopKillsStubborn(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	p, err := Start("stubborn", dir, log, "/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.01; done")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(log); strings.Contains(string(b), "ready") {
			break // the trap is installed
		}
		if time.Now().After(deadline) {
			t.Fatal("child never got ready")
		}
	}
	if err := p.Stop(context.Background(), 200*time.Millisecond); !errors.Is(err, ErrKilled) {
		t.Fatalf("stop: %v, want ErrKilled", err)
	}
}

func TestSelfCPUSecondsGrows(t *testing.T) {
	a := SelfCPUSeconds()
	x := 0
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
		x++
	}
	if b := SelfCPUSeconds(); b <= a {
		t.Fatalf("self cpu %v then %v after spinning (%d)", a, b, x)
	}
}
