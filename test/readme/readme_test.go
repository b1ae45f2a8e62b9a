// Package readme runs the README's shell examples as a new user would:
// in order, as written, in a fresh copy of the repository.
package readme

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// skipped are commands the test does not run: make run serves in the
// foreground until interrupted, and make test is what runs this test.
var skipped = map[string]bool{"make run": true, "make test": true}

// TestReadmeCommands extracts every sh block of README.md and runs its
// commands in one bash script with -e, in a copy of the work tree without
// bin/ and data/, so the README fails this test as soon as one of its
// commands stops working as written. The local clusters it starts use the
// fixed ports of configs/, so nothing else may listen on them.
func TestReadmeCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, n := shellScript(string(readme))
	if n < 15 {
		t.Fatalf("only %d commands found in README.md's sh blocks; the extraction no longer matches it", n)
	}
	for _, addr := range []string{"127.0.0.1:9092", "127.0.0.1:9192", "127.0.0.1:9644"} {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			t.Fatalf("something already listens on %s (a cluster of yours?): the README's clusters need the ports of configs/", addr)
		}
	}
	dir := copyTree(t, root)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	stop := exec.Command("make", "cluster-stop")
	stop.Dir = dir
	stopOut, _ := stop.CombinedOutput()
	if err != nil {
		t.Fatalf("a README command failed (%v); the output, each command after a + line:\n%s\nmake cluster-stop:\n%s%s",
			err, out.String(), stopOut, nodeLogs(dir))
	}
}

// shellScript joins the README's sh blocks into one bash script that
// echoes each command and stops at the first failure, and counts the
// commands.
func shellScript(readme string) (string, int) {
	var b strings.Builder
	b.WriteString("set -euo pipefail\nset -x\n")
	n := 0
	in := false
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in:
			cmd, _, _ := strings.Cut(line, " #")
			if skipped[strings.TrimSpace(cmd)] {
				continue
			}
			if !strings.HasPrefix(line, " ") && strings.TrimSpace(line) != "" {
				n++
			}
			b.WriteString(line + "\n")
		}
	}
	return b.String(), n
}

// copyTree copies the repository's tracked and untracked source into a
// temporary directory, as a fresh clone holds it: no bin/, data/,
// node_modules or .git.
func copyTree(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	copy := "tar -C \"$1\" --exclude=./bin --exclude=./data --exclude=./.git --exclude=node_modules --exclude=./bench/out -cf - . | tar -C \"$2\" -xf -"
	if out, err := exec.Command("bash", "-c", copy, "copy", root, dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the tree: %v %s", err, out)
	}
	return dir
}

// nodeLogs is the tail of each node's log, for a failure's message, and
// last the goroutine stacks a node whose shutdown hung wrote to its log
// (cmd/node's awaitShutdown; "shutdown stuck" is its message).
func nodeLogs(dir string) string {
	var b, stuck strings.Builder
	for n := 1; n <= 3; n++ {
		data, err := os.ReadFile(filepath.Join(dir, "data", fmt.Sprintf("node%d.log", n)))
		if err != nil {
			continue
		}
		text := string(data)
		if i := strings.Index(text, "shutdown stuck"); i >= 0 {
			fmt.Fprintf(&stuck, "\nnode%d's shutdown hung; its log from there:\n%s\n", n, text[i:])
			text = text[:i]
		}
		lines := strings.Split(strings.TrimSpace(text), "\n")
		fmt.Fprintf(&b, "\nlast lines of node%d.log:\n%s\n", n, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String() + stuck.String()
}
