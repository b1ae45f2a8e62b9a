// Command soak runs a 3-node MiniKafka cluster under steady produce load
// for a long time and records how each node's memory and disk use move:
// retention should hold the disk flat, and nothing should leak memory.
//
// It builds cmd/node, starts the cluster from generated config files,
// creates a topic (6 partitions, RF 3, retention.ms=60000, segment.bytes
// 1 MiB), measures peak throughput of idempotent acks=all producing with
// franz-go for 20 s, then produces at half of it for SOAK_DURATION
// (default 30m), sampling every 10 s each node's RSS and data-directory
// size. It writes soak.csv and soak.svg to out/soak/ and prints a summary.
// Run it from bench/ (make soak). See docs/soak.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// topic is the soak's topic.
const topic = "soak"

// options configure a soak.
type options struct {
	duration     time.Duration // steady phase
	peak         time.Duration // peak measurement
	interval     time.Duration // between samples
	retention    time.Duration // the topic's retention.ms
	partitions   int
	segmentBytes int   // the topic's segment.bytes
	valueSize    int   // bytes per record value
	window       int   // records outstanding at most
	maxDisk      int64 // bytes under all data directories that end the soak early
	out          string
	keepData     bool
}

// parseOptions reads flags; SOAK_DURATION gives the default duration.
func parseOptions(args []string, getenv func(string) string) (options, error) {
	var o options
	def := 30 * time.Minute
	if v := getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("SOAK_DURATION=%q: want a positive duration such as 30m", v)
		}
		def = d
	}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.DurationVar(&o.duration, "duration", def, "steady phase length (env SOAK_DURATION)")
	fs.DurationVar(&o.peak, "peak", 20*time.Second, "peak throughput measurement length")
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "time between samples")
	fs.DurationVar(&o.retention, "retention", time.Minute, "the topic's retention.ms")
	fs.IntVar(&o.partitions, "partitions", 6, "the topic's partitions")
	fs.IntVar(&o.segmentBytes, "segment-bytes", 1<<20, "the topic's segment.bytes")
	fs.IntVar(&o.valueSize, "value-size", 1024, "bytes per record value")
	fs.IntVar(&o.window, "window", 4096, "records outstanding at most")
	maxDiskGiB := fs.Int("max-disk-gib", 20, "end the soak early when the data directories hold more than this many GiB in all")
	fs.StringVar(&o.out, "out", "out/soak", "output directory")
	fs.BoolVar(&o.keepData, "keep-data", false, "keep the nodes' data directories")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.duration <= 0 || o.peak <= 0 || o.interval <= 0 || o.retention <= 0:
		return o, errors.New("durations must be positive")
	case o.partitions < 1 || o.segmentBytes < 1 || o.valueSize < 1 || o.window < 1 || *maxDiskGiB < 1:
		return o, errors.New("counts and sizes must be positive")
	}
	o.maxDisk = int64(*maxDiskGiB) << 30
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// gib renders bytes in GiB.
func gib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<30), 'f', 2, 64) + " GiB" }
