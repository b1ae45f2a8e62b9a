package reqfuzz

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxPanicLines bounds the log lines a panic report quotes.
const maxPanicLines = 30

// newPanics reads what each target's log gained since the last call and
// returns the first node id whose new lines mention a panic (a node that
// recovers a request's panic logs it and goes on: the round's checks
// would not see it otherwise), with those lines.
func (r *Runner) newPanics() (int, string, error) {
	for _, t := range r.cfg.Targets {
		if t.LogFile == "" {
			continue
		}
		b, err := r.readNewLog(t)
		if err != nil {
			return 0, "", err
		}
		if lines := panicLines(b); lines != "" {
			return t.ID, lines, nil
		}
	}
	return 0, "", nil
}

// readNewLog returns the bytes appended to t's log since the last read.
func (r *Runner) readNewLog(t Target) ([]byte, error) {
	f, err := os.Open(t.LogFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(r.logOffsets[t.ID], io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	r.logOffsets[t.ID] += int64(len(b))
	return b, err
}

// panicLines is the part of log from its first line that mentions a
// panic, at most maxPanicLines lines, or "".
func panicLines(log []byte) string {
	i := bytes.Index(bytes.ToLower(log), []byte("panic"))
	if i < 0 {
		return ""
	}
	start := bytes.LastIndexByte(log[:i], '\n') + 1
	lines := strings.SplitN(string(log[start:]), "\n", maxPanicLines+1)
	return strings.Join(lines[:min(len(lines), maxPanicLines)], "\n")
}

// PanicError is a node that logged a panic and kept running.
type PanicError struct {
	Node  int
	Lines string
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("node %d logged a panic:\n%s", e.Node, e.Lines)
}
