// Command minikafka-node runs one MiniKafka broker.
//
//	minikafka-node --config configs/single.yaml
//
// Every configuration key can come from the YAML file, from an environment
// variable MINIKAFKA_<KEY> (nested keys with _ for the dot, e.g.
// MINIKAFKA_RAFT_HEARTBEAT_TIMEOUT) or from a flag --<key> with dashes
// (e.g. --node-id, --raft-heartbeat-timeout); flags win over the
// environment, which wins over the file. An invalid configuration exits
// with status 2 and a message naming the key and the bad value.
//
// SIGTERM or SIGINT shuts the node down gracefully: leaderships move to
// other replicas, the Kafka listener stops, Raft groups and stores close.
// A second signal exits at once.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/logging"
)

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) (string, bool), stdout, stderr io.Writer) int {
	restrictUmask()
	opts, err := loadConfig(args, getenv, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "minikafka-node: %v\n", err)
		return 2
	}
	logger, closeLog, err := newLogger(stderr, opts)
	if err != nil {
		fmt.Fprintf(stderr, "minikafka-node: %v\n", err)
		return 2
	}
	defer closeLog()
	unlock, err := lockDataDir(opts.DataDir)
	if err != nil {
		fmt.Fprintf(stderr, "minikafka-node: %v\n", err)
		return 1
	}
	defer unlock()
	opts.Config.Logger = logger
	defer applyMemory(opts, logger)()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	startCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	node, err := broker.Start(startCtx, opts.Config)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "minikafka-node: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "minikafka-node %d: Kafka on %s (data in %s); stop with Ctrl-C\n",
		node.ID(), node.KafkaAddr(), opts.DataDir)

	if opts.AdminAddr != "" {
		_, stop, err := serveAdmin(opts.AdminAddr, node.AdminHandler(), logger)
		if err != nil {
			fmt.Fprintf(stderr, "minikafka-node: admin_addr=%s: %v\n", opts.AdminAddr, err)
			_ = node.Shutdown(context.Background())
			return 1
		}
		defer stop()
	}
	if opts.DebugAddr != "" {
		_, stop, err := serveDebug(opts.DebugAddr, logger, map[string]func() any{
			"raft_port": func() any { return node.RaftStats() },
		})
		if err != nil {
			fmt.Fprintf(stderr, "minikafka-node: debug_addr=%s: %v\n", opts.DebugAddr, err)
			_ = node.Shutdown(context.Background())
			return 1
		}
		defer stop()
	}

	sig := <-sigs
	logger.Info("shutting down", "signal", sig.String())
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), shutdownHandOver)
	defer cancel()
	go func() { done <- node.Shutdown(ctx) }()
	return awaitShutdown(done, sigs, shutdownStuck, logger, stderr)
}

// shutdownHandOver bounds the hand-over of leaderships at shutdown;
// shutdownStuck is when a shutdown still running is reported as stuck.
const (
	shutdownHandOver = 20 * time.Second
	shutdownStuck    = shutdownHandOver + 5*time.Second
	shutdownStuckMsg = "shutdown stuck; goroutine stacks follow"
)

// awaitShutdown waits for the shutdown's result or a second signal. A
// shutdown still running after stuck is logged with every goroutine's
// stack on stderr (the log's stream), so that whoever kills the process
// next knows where it hung.
func awaitShutdown(done <-chan error, sigs <-chan os.Signal, stuck time.Duration, logger *slog.Logger, stderr io.Writer) int {
	timer := time.NewTimer(stuck)
	defer timer.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				logger.Warn("shutdown finished with errors", "err", err)
			}
			return 0
		case sig := <-sigs:
			logger.Warn("second signal: exiting at once", "signal", sig.String())
			return 1
		case <-timer.C:
			logger.Error(shutdownStuckMsg, "after", stuck)
			_ = pprof.Lookup("goroutine").WriteTo(stderr, 1)
		}
	}
}

// applyMemory sets the Go memory limit from memory_limit and, with a GC
// floor (gc_min_heap), runs it until the returned func stops it.
func applyMemory(opts options, logger *slog.Logger) (stop func()) {
	limit := applyMemoryLimit(memoryLimit(opts.MemoryLimit))
	if limit > 0 && limit < math.MaxInt64 {
		logger.Info("memory limit", "bytes", limit)
	}
	minHeap := gcMinHeapFor(opts.GCMinHeap, limit)
	if minHeap <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runGCFloor(ctx, minHeap, debug.SetGCPercent) }()
	return func() { cancel(); <-done }
}

// newLogger is the node's logger: text lines on w at log_level, repeated
// kinds limited to log_rate_limit per log_rate_interval. The returned
// func reports the lines still held back.
func newLogger(w io.Writer, opts options) (*slog.Logger, func(), error) {
	level, err := logging.ParseLevel(opts.LogLevel)
	if err != nil {
		return nil, nil, fmt.Errorf("config log_level=%s: %w", opts.LogLevel, err)
	}
	limiter := logging.NewRateLimiter(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}),
		logging.RateLimitOptions{Burst: opts.LogRateLimit, Interval: opts.LogRateInterval})
	return slog.New(limiter.Handler()), limiter.Close, nil
}
