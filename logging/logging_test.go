package logging

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestHCLogLevelsAndMinimum(t *testing.T) {
	var buf bytes.Buffer
	base := New(&buf, slog.LevelDebug)
	h := HCLog(base, "raft", slog.LevelWarn).Named("g1").With("group", "events-0")
	h.Info("dropped info")
	h.Error("failed to heartbeat", "peer", "2")
	out := buf.String()
	if strings.Contains(out, "dropped info") {
		t.Fatalf("message below minimum was logged: %q", out)
	}
	for _, want := range []string{"level=ERROR", "failed to heartbeat", "peer=2", "logger=raft.g1", "group=events-0"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output %q lacks %q", out, want)
		}
	}
	if h.IsInfo() || !h.IsWarn() {
		t.Fatalf("IsInfo=%v IsWarn=%v with minimum warn", h.IsInfo(), h.IsWarn())
	}
}

// A relevel sees each line's level and arguments, also through Named and
// With, and its level meets the minimum as a logged one does.
func TestHCLogRelevel(t *testing.T) {
	var buf bytes.Buffer
	base := New(&buf, slog.LevelDebug)
	quiet := func(level slog.Level, _ string, args []any) slog.Level {
		if len(args) > 1 && args[1] == "down" {
			return slog.LevelInfo
		}
		return level
	}
	h := HCLogRelevel(base, "raft", slog.LevelWarn, quiet).Named("g1").With("group", "events-0")
	h.Error("failed to heartbeat", "peer", "down")
	h.Error("failed to append", "peer", "up")
	out := buf.String()
	if strings.Contains(out, "failed to heartbeat") {
		t.Fatalf("a line relevelled below the minimum was logged: %q", out)
	}
	if !strings.Contains(out, "level=ERROR msg=\"failed to append\"") {
		t.Fatalf("a line the relevel kept is missing: %q", out)
	}
}

func TestStdLogParsesLevelPrefix(t *testing.T) {
	var buf bytes.Buffer
	l := StdLog(New(&buf, slog.LevelDebug), slog.LevelInfo)
	l.Printf("[DEBUG] memberlist: probing")
	l.Printf("[WARN] memberlist: refuting suspect")
	out := buf.String()
	if strings.Contains(out, "probing") {
		t.Fatalf("debug line logged under info minimum: %q", out)
	}
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, `msg="memberlist: refuting suspect"`) {
		t.Fatalf("warn line missing or unparsed: %q", out)
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError, "off": LevelOff} {
		got, err := ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseLevel("loud"); err == nil {
		t.Error("ParseLevel(loud) succeeded")
	}
}
