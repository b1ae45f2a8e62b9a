package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// A node that fails to start (its Raft port taken) exits 1 naming the
// port, and does not log "node stopped": it never started.
func TestFailedStartLogsNoStop(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var out, errOut bytes.Buffer
	code := run([]string{"--node-id", "1", "--data-dir", t.TempDir(), "--bootstrap-expect", "1",
		"--kafka-addr", freeAddr(t), "--gossip-addr", freeAddr(t), "--raft-addr", taken.Addr().String()},
		env(), &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "address already in use") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
	if strings.Contains(errOut.String(), "node stopped") {
		t.Fatalf("a node that never started logged \"node stopped\":\n%s", errOut.String())
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
