package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testcluster.GoleakOptions()...)
}

// cli is the outcome of one command line.
type cli struct {
	stdout, stderr string
	code           int
}

// runCLI runs a command line in-process with stdin as input.
func runCLI(t *testing.T, stdin string, args ...string) cli {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, args, strings.NewReader(stdin), &out, &errOut)
	if ctx.Err() != nil {
		t.Fatalf("minikafka %v did not finish within a minute", args)
	}
	return cli{stdout: out.String(), stderr: errOut.String(), code: code}
}

// mustRun runs a command line that must succeed.
func mustRun(t *testing.T, stdin string, args ...string) cli {
	t.Helper()
	r := runCLI(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("minikafka %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
