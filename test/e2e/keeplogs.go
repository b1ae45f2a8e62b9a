package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// keepFailedLogs copies the node logs of a failed test to a new directory under
// the system's temp dir, which the test's cleanup does not remove, and
// returns it: a failure found by a long run (make e2e, make jepsen) can
// then be read whole, not only by the tails the test prints.
func keepFailedLogs(files []string) (string, error) {
	dir, err := os.MkdirTemp("", "minikafka-failed-logs-")
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if err := copyFile(f, filepath.Join(dir, filepath.Base(f))); err != nil {
			return dir, fmt.Errorf("keeping %s: %w", f, err)
		}
	}
	return dir, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ErrorLines returns node id's log lines at level ERROR from the named
// logger (the "logger" attribute, e.g. "raft").
func (c *Cluster) ErrorLines(id int, logger string) ([]string, error) {
	b, err := os.ReadFile(c.nodes[id-1].LogFile)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, " level=ERROR ") && strings.Contains(line, " logger="+logger+" ") {
			out = append(out, line)
		}
	}
	return out, nil
}
