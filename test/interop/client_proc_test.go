package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/internal/testlog"
)

// Clients in other languages run as child processes: a script in this
// folder, started as
//
//	SCRIPT produce BROKERS TOPIC   (stdin: the records as a JSON array)
//	SCRIPT consume BROKERS GROUP TOPIC
//
// writes one JSON event a line on stdout:
//
//	{"type":"assigned","partitions":[0,2]}   its whole current assignment
//	{"type":"record","partition":0,"offset":3,"value":"..."}
//	                                         produced (acknowledged) or consumed
//	{"type":"committed"}                     answers "commit" on stdin
//	{"type":"error","error":"..."}
//
// A consumer reads commands on stdin, one a line: "commit" commits the
// offset after every record it delivered, synchronously; "close" (or the
// end of stdin) leaves the group and exits.

// procClient is a client implementation in a child process.
type procClient struct {
	name string
	// command returns the program and the arguments before the mode, or
	// fails the test if the client is not installed.
	command func(t *testing.T) (string, []string)
	env     []string
}

func (pc procClient) groupClient() groupClient {
	return groupClient{name: pc.name, produce: pc.produce, join: pc.join}
}

func (pc procClient) start(t *testing.T, args ...string) (*exec.Cmd, *testlog.Buffer) {
	t.Helper()
	path, pre := pc.command(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, path, append(pre, args...)...)
	cmd.Env = append(os.Environ(), pc.env...)
	cmd.WaitDelay = 5 * time.Second
	stderr := &testlog.Buffer{}
	cmd.Stderr = stderr
	// A process still running at the end (the test failed) is killed;
	// the caller waits for it.
	t.Cleanup(cancel)
	return cmd, stderr
}

func (pc procClient) produce(t *testing.T, seeds []string, topic string, recs []record) []record {
	t.Helper()
	cmd, stderr := pc.start(t, "produce", strings.Join(seeds, ","), topic)
	in, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = bytes.NewReader(in)
	var out bytes.Buffer
	cmd.Stdout = &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", pc.name, err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(timeout):
		cmd.Process.Kill()
		err = fmt.Errorf("still running after %v: %w", timeout, <-done)
	}
	var got []record
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev procEvent
		if jerr := json.Unmarshal([]byte(line), &ev); jerr != nil || ev.Type == "error" {
			t.Errorf("%s producer: %s", pc.name, line)
			continue
		}
		if ev.Type == "record" {
			got = append(got, ev.record)
		}
	}
	if err != nil || t.Failed() {
		t.Fatalf("%s producer: %v\nstderr:\n%s", pc.name, err, stderr)
	}
	return got
}

// procEvent is one line a client script writes.
type procEvent struct {
	Type       string  `json:"type"`
	Partitions []int32 `json:"partitions"`
	Error      string  `json:"error"`
	record
}

func (pc procClient) join(t *testing.T, seeds []string, group, topic string) *member {
	t.Helper()
	cmd, stderr := pc.start(t, "consume", strings.Join(seeds, ","), group, topic)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", pc.name, err)
	}
	m := &member{}
	committed := make(chan struct{}, 1)
	exited := make(chan struct{})
	var waitErr error
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev procEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				m.log.note("stdout: %s", sc.Text())
				continue
			}
			switch ev.Type {
			case "assigned":
				m.log.assign(ev.Partitions)
			case "record":
				m.log.deliver(ev.record)
			case "committed":
				committed <- struct{}{}
			case "error":
				m.log.fail(errors.New(ev.Error))
			default:
				m.log.note("stdout: %s", sc.Text())
			}
		}
		io.Copy(io.Discard, stdout)
		waitErr = cmd.Wait()
		if waitErr != nil {
			m.log.fail(fmt.Errorf("exited: %w; stderr:\n%s", waitErr, stderr))
		}
		close(exited)
	}()
	// send writes a command; the mutex keeps commands whole.
	var mu sync.Mutex
	send := func(cmd string) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := io.WriteString(stdin, cmd+"\n")
		return err
	}
	m.commit = func(ctx context.Context) error {
		if err := send("commit"); err != nil {
			return err
		}
		select {
		case <-committed:
			return nil
		case <-exited:
			return fmt.Errorf("exited: %v; stderr:\n%s", waitErr, stderr)
		case <-ctx.Done():
			return fmt.Errorf("no answer to commit: %w; stderr:\n%s", ctx.Err(), stderr)
		}
	}
	m.close = sync.OnceValue(func() error {
		send("close")
		stdin.Close()
		select {
		case <-exited:
			if _, _, failure := m.log.snapshot(); failure != nil {
				return failure
			}
			return waitErr
		case <-time.After(timeout):
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("still running %v after close; stderr:\n%s", timeout, stderr)
		}
	})
	t.Cleanup(func() { m.close() })
	return m
}

// confluentClient is librdkafka through Debian's python3-confluent-kafka:
// an idempotent producer, and a consumer with librdkafka's default
// assignors (range, roundrobin) and manual commits.
func confluentClient() groupClient {
	return procClient{
		name: "librdkafka",
		command: func(t *testing.T) (string, []string) {
			t.Helper()
			return confluentPython(t), []string{"group_client.py"}
		},
	}.groupClient()
}

var confluentPythonOnce = sync.OnceValues(func() (string, error) {
	// Debian's package installs for Debian's python3, which need not be
	// the first python3 on the PATH.
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", "import confluent_kafka").Run() == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no python3 of %v imports confluent_kafka", candidates)
})

func confluentPython(t *testing.T) string {
	t.Helper()
	p, err := confluentPythonOnce()
	if err != nil {
		t.Fatalf("librdkafka's Python client is not installed (`make test-deps` installs Debian's python3-confluent-kafka): %v", err)
	}
	return p
}

// kafkajsClient is kafkajs (npm, pinned by package-lock.json): an
// idempotent producer, and a consumer with kafkajs' round-robin assignor
// and manual commits.
func kafkajsClient() groupClient {
	return procClient{
		name: "kafkajs",
		command: func(t *testing.T) (string, []string) {
			t.Helper()
			node, err := exec.LookPath("node")
			if err != nil {
				t.Fatal("node is not installed: kafkajs runs on Node.js")
			}
			if _, err := os.Stat(filepath.Join("node_modules", "kafkajs", "package.json")); err != nil {
				t.Fatalf("kafkajs is not installed (`make test-deps` runs npm ci in test/interop): %v", err)
			}
			return node, []string{"group_client.js"}
		},
		env: []string{"KAFKAJS_NO_PARTITIONER_WARNING=1"},
	}.groupClient()
}
