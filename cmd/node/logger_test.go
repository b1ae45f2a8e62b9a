package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/logging"
)

// TestNodeLoggerLimitsStormsByDefault: with the default configuration,
// 10,000 election lines from 1,000 partitions' raft groups become
// log_rate_limit lines and one that counts the rest; with
// log_rate_limit 0 every line is written.
func TestNodeLoggerLimitsStormsByDefault(t *testing.T) {
	opts, err := loadConfig(nil, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.LogRateLimit != defaultLogRateLimit || opts.LogRateInterval != 10*time.Second {
		t.Fatalf("default log_rate_limit %d per %v", opts.LogRateLimit, opts.LogRateInterval)
	}
	opts.LogRateInterval = time.Hour // one window, however slow the machine
	storm := func(opts options) []string {
		var buf bytes.Buffer
		logger, closeLog, err := newLogger(&buf, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10_000 {
			hl := logging.HCLog(logger.With("partition", fmt.Sprintf("t-%d", i%1000)), "raft", slog.LevelWarn)
			hl.Warn("Election timeout reached, restarting election")
		}
		closeLog()
		return strings.Split(strings.TrimSpace(buf.String()), "\n")
	}
	lines := storm(opts)
	if len(lines) != defaultLogRateLimit+1 || !strings.Contains(lines[len(lines)-1], "repeated 9980 more times") {
		t.Fatalf("%d lines, the last %q; want %d and a count of 9980", len(lines), lines[len(lines)-1], defaultLogRateLimit+1)
	}
	opts.LogRateLimit = 0
	if lines := storm(opts); len(lines) != 10_000 {
		t.Fatalf("%d lines with log_rate_limit 0, want all 10000", len(lines))
	}
}
