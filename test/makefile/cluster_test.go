// Package makefile tests the Makefile's local-cluster targets with a stand-in
// node, so that they run without the fixed ports of configs/.
package makefile

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// script writes an executable shell script named name into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeNode writes a stand-in minikafka-node into dir: a script that waits
// (its process named minikafka-node, as the real one's is, even as a
// zombie), and a stand-in CLI for which nothing answers but cluster status.
func fakeNode(t *testing.T, dir string) (node, cli string) {
	return script(t, dir, "minikafka-node", "while :; do sleep 1; done"),
		script(t, dir, "minikafka", `case "$*" in *status*) exit 0;; *) exit 1;; esac`)
}

// zombie starts the stand-in and kills it without reaping it, so that its
// pid stays taken by a zombie ("[minikafka-node] <defunct>") until the
// test ends.
func zombie(t *testing.T, node string) int {
	t.Helper()
	cmd := exec.Command(node)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Wait() })
	pid := cmd.Process.Pid
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Skipf("no /proc here: %v", err)
		}
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not become a zombie: %s", pid, b)
		}
	}
}

// makeTarget runs make target in the repository's top directory with vars.
func makeTarget(t *testing.T, target string, vars ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "make", append([]string{"--no-print-directory", target}, vars...)...)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A pid file whose process was killed but not yet reaped (a zombie) is not
// a running node: make cluster starts the node, and make cluster-stop says
// it is not running instead of waiting 30 s for it to exit.
func TestClusterTakesNoZombieForANode(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	node, cli := fakeNode(t, dir)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(data, "node1.pid")
	write := func(pid int) {
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ready := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ready.Close()
	vars := []string{"GO=true", "CLI=" + cli, "NODE=" + node, "DATA=" + data, "CLUSTER_NODES=1",
		"CLUSTER_BROKERS=127.0.0.1:1", "CLUSTER_ADMIN=" + strings.TrimPrefix(ready.URL, "http://")}

	t.Run("cluster-stop", func(t *testing.T) {
		write(zombie(t, node))
		start := time.Now()
		out, err := makeTarget(t, "cluster-stop", vars...)
		if err != nil || !strings.Contains(out, "node 1 is not running") || time.Since(start) > 10*time.Second {
			t.Fatalf("make cluster-stop with a zombie's pid (%v, after %v):\n%s", err, time.Since(start), out)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		write(zombie(t, node))
		out, err := makeTarget(t, "cluster", vars...)
		b, _ := os.ReadFile(pidFile)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		}
		if err != nil || !strings.Contains(out, "node 1 started") {
			t.Fatalf("make cluster with a zombie's pid in node1.pid did not start node 1 (%v):\n%s", err, out)
		}
	})
}
