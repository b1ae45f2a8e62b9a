package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bad command lines exit 2 with one line on stderr, without contacting a
// broker.
func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bogus"},
		{"topic", "crate", "x"},
		{"topic", "create"},
		{"topic", "create", "a", "b"},
		{"topic", "create", "x", "--partitions", "0"},
		{"topic", "list", "extra"},
		{"produce"},
		{"produce", "t", "--acks", "2"},
		{"produce", "t", "--partition", "-2"},
		{"consume", "t", "--format", "%x"},
		{"consume", "t", "-n", "-1"},
		{"consume", "t", "--no-such-flag"},
		{"cluster", "status", "--wait", "-1s"},
		{"topic", "list", "--brokers", "nohostport"},
		{"topic", "list", "--timeout", "0s"},
	} {
		r := runCLI(t, "", args...)
		if r.code != exitUsage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "minikafka: ") {
			t.Errorf("minikafka %v: exit %d, stdout %q, stderr %q; want exit 2 and one line on stderr", args, r.code, r.stdout, r.stderr)
		}
	}
}

// Help is not an error.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{}, {"--help"}, {"topic"}, {"consume", "--help"}, {"group"}, {"group", "reset-offsets", "--help"}} {
		r := runCLI(t, "", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage:") || r.stderr != "" {
			t.Errorf("minikafka %v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

// A wrong broker address fails fast, every command, with one line naming
// the address and the reason.
func TestWrongBrokerFailsFast(t *testing.T) {
	addr := closedPort(t)
	want := "minikafka: cannot reach any broker at " + addr + ": connection refused\n"
	for _, args := range [][]string{
		{"topic", "list"},
		{"topic", "create", "x"},
		{"topic", "describe"},
		{"produce", "x"},
		{"consume", "x", "--from-beginning"},
		{"consume", "x", "--group", "g"},
		{"group", "list"},
		{"group", "describe", "g"},
		{"group", "delete", "g"},
		{"group", "reset-offsets", "g", "--to-earliest"},
		{"cluster", "status"},
	} {
		args = append(args, "--brokers", addr, "--timeout", "30s")
		start := time.Now()
		r := runCLI(t, "line\n", args...)
		if r.code != exitFailure || r.stderr != want || r.stdout != "" {
			t.Errorf("minikafka %v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, r.code, r.stdout, r.stderr, want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("minikafka %v took %v: it should give up long before --timeout", args, d)
		}
	}
}

// cluster status --wait keeps trying a refusing address until --wait
// passes, then names it.
func TestStatusWaitTimesOut(t *testing.T) {
	addr := closedPort(t)
	start := time.Now()
	r := runCLI(t, "", "cluster", "status", "--brokers", addr, "--wait", "700ms")
	want := fmt.Sprintf("minikafka: cluster not ready after 700ms: %s: connection refused\n", addr)
	if r.code != exitFailure || r.stderr != want {
		t.Fatalf("exit %d, stderr %q; want %q", r.code, r.stderr, want)
	}
	if d := time.Since(start); d < 700*time.Millisecond {
		t.Fatalf("gave up after %v, before --wait", d)
	}
}

func TestUnreachableErrorText(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &osSyscallErr{syscall.ECONNREFUSED}}
	dns := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "nohost"}}
	e := &UnreachableError{Addrs: []string{"a:1", "b:2"}, Reasons: []error{refused, refused}}
	if got, want := e.Error(), "cannot reach any broker at a:1,b:2: connection refused"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(e, syscall.ECONNREFUSED) {
		t.Errorf("%v does not match ECONNREFUSED", e)
	}
	e = &UnreachableError{Addrs: []string{"a:1", "nohost:2"}, Reasons: []error{refused, dns}}
	if got, want := e.Error(), "cannot reach any broker at a:1 (connection refused), nohost:2 (no such host)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// osSyscallErr stands in for *os.SyscallError without a real dial.
type osSyscallErr struct{ errno syscall.Errno }

func (e *osSyscallErr) Error() string { return "connect: " + e.errno.Error() }
func (e *osSyscallErr) Unwrap() error { return e.errno }
