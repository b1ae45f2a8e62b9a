//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nodeArgsEnv holds, for TestHelperNodeProcess, the arguments of the node
// it runs, one per line.
const nodeArgsEnv = "MINIKAFKA_TEST_NODE_ARGS"

// TestHelperNodeProcess is not a test: it is the node process that
// TestDataDirInUse starts from the test binary.
func TestHelperNodeProcess(t *testing.T) {
	args := os.Getenv(nodeArgsEnv)
	if args == "" {
		t.Skip("runs only as TestDataDirInUse's node process")
	}
	os.Exit(run(strings.Split(args, "\n"), env(), os.Stdout, os.Stderr))
}

// A second node on the data directory of a running node process exits at
// once, saying the directory is in use and by which pid, before it binds a
// port or joins gossip.
func TestDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	nodeArgs := func() []string {
		return []string{"--node-id", "1", "--data-dir", dir, "--bootstrap-expect", "1", "--log-level", "warn",
			"--kafka-addr", freeAddr(t), "--gossip-addr", freeAddr(t), "--raft-addr", freeAddr(t)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperNodeProcess$")
	first.Env = append(os.Environ(), nodeArgsEnv+"="+strings.Join(nodeArgs(), "\n"))
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	out, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = first.Process.Signal(syscall.SIGTERM)
		_ = first.Wait()
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); !strings.Contains(line, "Kafka on") {
		t.Fatalf("the first node did not start: %q %v\n%s", line, err, firstErr.String())
	}

	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(nodeArgs(), env(), &stdout, &stderr)
	want := fmt.Sprintf("minikafka-node: data directory %s is in use by another process (pid %d)\n", dir, first.Process.Pid)
	if code != 1 || stderr.String() != want {
		t.Fatalf("second node: exit %d, stderr %q; want exit 1 and %q", code, stderr.String(), want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the second node took %v to give up", d)
	}

	_, err = lockDataDir(dir)
	if !errors.Is(err, errDataDirInUse) {
		t.Fatalf("lockDataDir on a held directory: %v, want errDataDirInUse", err)
	}
}
