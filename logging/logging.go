// Package logging builds the node's log/slog loggers and adapts them for the
// hashicorp libraries: hclog for raft and raft-boltdb, and a *log.Logger
// for memberlist. Every adapter keeps a minimum level of its own so that one
// noisy library (raft logs failed heartbeats at ERROR, once per group) can be
// quieted without silencing the rest.
package logging

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
)

// ParseLevel turns "debug", "info", "warn", "error" or "off" into a level.
// "off" gives a level above every message.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug", "trace":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	case "off", "none", "quiet":
		return LevelOff, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn, error or off)", s)
}

// LevelOff is above every level a library logs at.
const LevelOff = slog.Level(100)

// New returns a text logger writing to w at the given level.
func New(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// Discard is a logger that drops everything; tests use it to stay quiet.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// StdLog returns a *log.Logger whose lines, in the "[LEVEL] text" shape that
// memberlist writes, go to l at the matching level; lines below min are
// dropped.
func StdLog(l *slog.Logger, min slog.Level) *log.Logger {
	return log.New(&levelWriter{l: l, min: min}, "", 0)
}

// levelWriter parses the "[DEBUG] ..." prefix of standard-library log lines.
type levelWriter struct {
	l   *slog.Logger
	min slog.Level
}

func (w *levelWriter) Write(p []byte) (int, error) {
	n := len(p)
	line := bytes.TrimRight(p, "\r\n")
	level := slog.LevelInfo
	if len(line) > 0 && line[0] == '[' {
		if end := bytes.IndexByte(line, ']'); end > 0 {
			switch string(line[1:end]) {
			case "TRACE", "DEBUG":
				level = slog.LevelDebug
			case "INFO":
				level = slog.LevelInfo
			case "WARN", "WARNING":
				level = slog.LevelWarn
			case "ERR", "ERROR":
				level = slog.LevelError
			}
			line = bytes.TrimLeft(line[end+1:], " ")
		}
	}
	if level >= w.min {
		w.l.Log(context.Background(), level, string(line))
	}
	return n, nil
}
