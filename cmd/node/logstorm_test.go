package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/internal/testlog"
)

// TestElectionStormLogsBounded runs a real 3-node cluster whose node 1
// logs through the node's logger (log_rate_limit 5 per 1 s), halts
// nodes 2 and 3, and lets node 1's Raft groups campaign without a quorum.
// Every kind of line (level, message, logger) is written at most 5 times
// per window plus one summary, so node 1's whole log is bounded by its
// kinds and its run time, not by its partitions: the kinds are fewer than
// the partitions, a written kind comes from several partitions, and the
// summaries counted lines that were not written.
func TestElectionStormLogsBounded(t *testing.T) {
	const burst, interval, partitions = 5, time.Second, 60
	opts, err := loadConfig(nil, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	opts.LogRateLimit, opts.LogRateInterval = burst, interval
	var out testlog.Buffer
	logger, closeLog, err := newLogger(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		if cfg.NodeID == 1 {
			cfg.Logger = logger
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	if resp, err := adm.CreateTopic(ctx, partitions, 3, nil, "storm"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	for p := range int32(partitions) {
		if l, _ := c.Leader("storm", p, 30*time.Second); l < 0 {
			t.Fatalf("partition %d has no leader", p)
		}
	}
	c.HaltNode(2)
	c.HaltNode(3)
	// Campaign until some raft line has been held back and counted (a
	// window has ended), and one window more.
	for !strings.Contains(out.String(), "logger=raft repeated=") {
		if ctx.Err() != nil {
			t.Fatalf("no raft line was counted before the timeout; node 1 wrote:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(interval)
	c.HaltNode(1)
	// Read before Close: a closed limiter lets every line through.
	log, elapsed := out.String(), time.Since(start)
	closeLog()
	checkStormLog(t, log, elapsed, burst, interval, partitions)
}

var (
	lineKind     = regexp.MustCompile(`level=(\S+) msg=("(?:[^"\\]|\\.)*"|\S+)`)
	lineLogger   = regexp.MustCompile(` (?:logger|component)=(\S+)`)
	linePart     = regexp.MustCompile(` partition=(\S+)`)
	lineRepeated = regexp.MustCompile(` repeated=(\d+)`)
	summarySufx  = regexp.MustCompile(` \((repeated|and) \d+ more .*\)"$`)
)

// checkStormLog checks the bound of TestElectionStormLogsBounded on the
// log a node wrote over elapsed.
func checkStormLog(t *testing.T, log string, elapsed time.Duration, burst int, interval time.Duration, partitions int) {
	t.Helper()
	windows := int(elapsed/interval) + 1 // a window lasts an interval, the last one may be cut short
	written := map[string]int{}
	parts := map[string]map[string]bool{}
	summaries, counted := map[string]int{}, 0
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for _, line := range lines {
		m := lineKind.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a log line: %q", line)
		}
		logger := "" // the logger and component attributes, as the limiter's kind has them
		for _, l := range lineLogger.FindAllStringSubmatch(line, -1) {
			logger += l[0]
		}
		if r := lineRepeated.FindStringSubmatch(line); r != nil {
			n, _ := strconv.Atoi(r[1])
			counted += n
			summaries[m[1]+" "+summarySufx.ReplaceAllString(m[2], `"`)+" "+logger]++
			continue
		}
		kind := m[1] + " " + m[2] + " " + logger
		written[kind]++
		if p := linePart.FindStringSubmatch(line); p != nil {
			if parts[kind] == nil {
				parts[kind] = map[string]bool{}
			}
			parts[kind][p[1]] = true
		}
	}
	for kind := range summaries {
		if written[kind] < burst {
			t.Errorf("kind %s: a summary after %d lines, want %d first", kind, written[kind], burst)
		}
	}
	manyParts := 0
	for kind, n := range written {
		if n > burst*windows || summaries[kind] > windows {
			t.Errorf("kind %s: %d lines and %d summaries in %d windows, want at most %d and %d", kind, n, summaries[kind], windows, burst*windows, windows)
		}
		if len(parts[kind]) > 1 {
			manyParts++
		}
	}
	if len(written) >= partitions || manyParts == 0 || counted == 0 {
		t.Errorf("%d kinds for %d partitions, %d kinds from several partitions, %d lines counted, not written", len(written), partitions, manyParts, counted)
	}
	if bound := len(written) * (burst + 1) * windows; len(lines) > bound {
		t.Errorf("%d lines over %v, want at most %d", len(lines), elapsed, bound)
	}
	t.Logf("node 1 wrote %d lines of %d kinds over %v (%d windows); the summaries counted %d more", len(lines), len(written), elapsed.Round(time.Millisecond), windows, counted)
}
