package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/report"
	"github.com/minikafka/minikafka-go/bench/internal/targets"
	"github.com/minikafka/minikafka-go/client"
)

// options are the command's flags, validated.
type options struct {
	quick       bool
	warmup      time.Duration
	duration    time.Duration
	sizes       []int
	partitions  []int // partition counts (JetStream: streams), ascending
	windowBytes int
	halfLoad    bool
	systems     []string // report.System keys, in report.SystemOrder
	repo        string
	out         string
	keepData    bool
	nodeArgs    []string
	cpuProfile  string

	// clusterWarmup is how long the first system of each fresh cluster
	// sends, unmeasured, before the cluster's first run.
	clusterWarmup time.Duration

	// cachedConfigs are the topic configs of ours-cached: write.caching=true
	// and what -cached-topic-configs adds.
	cachedConfigs map[string]string

	rate float64 // offered records/s of the fixed-load runs; 0 = half of our client's peak

	ourBatchSize int           // 0 = the client's default
	ourLinger    time.Duration // < 0 = the client's default

	txnProducers int // transactional clients of franz-txn; 0 = as many as the window holds transactions
}

var errFlags = errors.New("bad flags")

// rawFlags are the flags that are parsed further into options.
type rawFlags struct {
	sizes, systems, nodeArgs, partitions, cachedConfigs string
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	var raw rawFlags
	fs := o.flagSet(&raw)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return o, errFlags
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick {
		o.quickDefaults(set)
	}
	bad := func(format string, a ...any) (options, error) {
		fmt.Fprintf(stderr, "bench: "+format+"\n", a...)
		return o, errFlags
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.sizes, err = parseSizes(raw.sizes); err != nil {
		return bad("%v", err)
	}
	if o.systems, err = parseSystems(raw.systems); err != nil {
		return bad("%v", err)
	}
	if o.partitions, err = parsePartitions(raw.partitions); err != nil {
		return bad("%v", err)
	}
	if o.cachedConfigs, err = parseConfigs(raw.cachedConfigs); err != nil {
		return bad("%v", err)
	}
	o.cachedConfigs[writeCaching] = "true"
	switch {
	case o.warmup < 0 || o.duration <= 0:
		return bad("-warmup must be >= 0 and -duration > 0")
	case o.clusterWarmup < 0:
		return bad("-cluster-warmup must be >= 0")
	case o.rate < 0:
		return bad("-rate must be >= 0")
	case o.ourBatchSize < 0:
		return bad("-our-batch-size must be >= 0")
	case o.windowBytes < 1:
		return bad("-window-bytes must be >= 1")
	case o.txnProducers < 0:
		return bad("-txn-producers must be >= 0")
	}
	o.nodeArgs = strings.Fields(raw.nodeArgs)
	if o.quick {
		// A new topic's leader moves to its preferred replica within the
		// rebalance interval (10s by default), and the bench waits for that
		// before measuring; a smoke check should not wait so long.
		o.nodeArgs = append([]string{"--leader-rebalance-interval", "1s"}, o.nodeArgs...)
	}
	return o, nil
}

// flagSet defines every flag, writing into o and raw.
func (o *options) flagSet(raw *rawFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.BoolVar(&o.quick, "quick", false, "smoke check: short runs (warm-up 0.5s, 1s measured, 1 MiB window) unless -warmup/-duration/-window-bytes are given")
	fs.DurationVar(&o.warmup, "warmup", 3*time.Second, "time each run sends before measuring")
	fs.DurationVar(&o.duration, "duration", 12*time.Second, "measured time of each run")
	fs.DurationVar(&o.clusterWarmup, "cluster-warmup", 20*time.Second, "before the first run on each fresh cluster, its first system sends at peak this long, unmeasured (a fresh MiniKafka node costs several times more CPU per record for its first ~200 MB); 0 = none")
	fs.StringVar(&raw.sizes, "sizes", "1024,100", "record value sizes in bytes, comma-separated")
	fs.StringVar(&raw.partitions, "partitions", "1", "partition counts, comma-separated (e.g. 1,12): every system is measured with each; JetStream gets as many R3 streams, records go round robin")
	fs.StringVar(&raw.cachedConfigs, "cached-topic-configs", "", "topic configs of ours-cached besides write.caching=true, name=value comma-separated (e.g. flush.ms=1000)")
	fs.IntVar(&o.windowBytes, "window-bytes", 4<<20, "value bytes outstanding (sent, not acked) at most; window in records = this / size")
	fs.BoolVar(&o.halfLoad, "half-load", true, "also run every system at half of our client's peak rate")
	fs.StringVar(&raw.systems, "systems", strings.Join(report.SystemOrder, ","), "systems to run: "+strings.Join(report.SystemOrder, ","))
	fs.StringVar(&o.repo, "repo", "..", "root of the minikafka-go module (cmd/node, configs/)")
	fs.StringVar(&o.out, "out", "out", "directory for results.json, chart.png/svg, logs/ and data/")
	fs.BoolVar(&o.keepData, "keep-data", false, "keep the servers' data directories after the run")
	fs.StringVar(&raw.nodeArgs, "node-args", "", "extra flags for every MiniKafka node, space-separated; {id} becomes the node's id 1..3 (e.g. \"--raft-log-store pebble --debug-addr 127.0.0.1:606{id}\")")
	fs.Float64Var(&o.rate, "rate", 0, "offered records/s of the fixed-load runs (0 = half of our client's peak at each size)")
	fs.IntVar(&o.ourBatchSize, "our-batch-size", 0, "BatchSize option of our client in bytes (0 = its default, 1 MiB)")
	fs.DurationVar(&o.ourLinger, "our-linger", -1, "Linger option of our client (negative = its default, 5ms)")
	fs.IntVar(&o.txnProducers, "txn-producers", 0, fmt.Sprintf("transactional franz-go clients of franz-txn, each running one transaction of %d records at a time (0 = as many as the window holds transactions, at most %d; never more)", targets.TxnRecords, maxAutoTxnProducers))
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the bench process (the clients) to this file")
	return fs
}

// quickDefaults shortens the runs for -quick, except what set (the flags
// given) names.
func (o *options) quickDefaults(set map[string]bool) {
	if !set["warmup"] {
		o.warmup = 500 * time.Millisecond
	}
	if !set["cluster-warmup"] {
		o.clusterWarmup = 0
	}
	if !set["duration"] {
		o.duration = time.Second
	}
	if !set["window-bytes"] {
		o.windowBytes = 1 << 20
	}
}

// parseSizes parses -sizes, dropping repeats.
func parseSizes(list string) ([]int, error) {
	var sizes []int
	for s := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1<<20 {
			return nil, fmt.Errorf("-sizes: %q is not a size from 1 to 1048576", s)
		}
		if !slices.Contains(sizes, n) {
			sizes = append(sizes, n)
		}
	}
	return sizes, nil
}

// parsePartitions parses -partitions, ascending without repeats.
func parsePartitions(list string) ([]int, error) {
	var ps []int
	for s := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("-partitions: %q is not a count from 1 to 1000", s)
		}
		if !slices.Contains(ps, n) {
			ps = append(ps, n)
		}
	}
	slices.Sort(ps)
	return ps, nil
}

// writeCaching is the topic config of ours-cached.
const writeCaching = "write.caching"

// parseConfigs parses -cached-topic-configs: name=value pairs.
func parseConfigs(list string) (map[string]string, error) {
	cfg := map[string]string{}
	for s := range strings.SplitSeq(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		name, value, ok := strings.Cut(s, "=")
		if name = strings.TrimSpace(name); !ok || name == "" || name == writeCaching {
			return nil, fmt.Errorf("-cached-topic-configs: %q is not name=value (write.caching is always true)", s)
		}
		cfg[name] = strings.TrimSpace(value)
	}
	return cfg, nil
}

// parseSystems parses -systems into report.SystemOrder's order.
func parseSystems(list string) ([]string, error) {
	want := map[string]bool{}
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(report.SystemOrder, s) {
			return nil, fmt.Errorf("-systems: unknown system %q (want %s)", s, strings.Join(report.SystemOrder, ","))
		}
		want[s] = true
	}
	var systems []string
	for _, s := range report.SystemOrder {
		if want[s] {
			systems = append(systems, s)
		}
	}
	return systems, nil
}

// window is the number of records outstanding at most for a size.
func (o options) window(size int) int { return max(o.windowBytes/size, 1) }

// ourOpts are the client options the flags ask for.
func (o options) ourOpts() []client.Opt {
	var opts []client.Opt
	if o.ourBatchSize > 0 {
		opts = append(opts, client.BatchSize(o.ourBatchSize))
	}
	if o.ourLinger >= 0 {
		opts = append(opts, client.Linger(o.ourLinger))
	}
	return opts
}

func (o options) has(system string) bool { return slices.Contains(o.systems, system) }

// modes is the number of modes each system runs in at each size.
func (o options) modes() int {
	if o.halfLoad {
		return 2
	}
	return 1
}

// runs is the number of runs of the invocation.
func (o options) runs() int { return len(o.systems) * len(o.partitions) * len(o.sizes) * o.modes() }

// logStore is the partitions' Raft log store the node flags ask for.
func (o options) logStore() string {
	for i, a := range o.nodeArgs {
		if v, ok := strings.CutPrefix(a, "--raft-log-store="); ok {
			return v
		}
		if a == "--raft-log-store" && i+1 < len(o.nodeArgs) {
			return o.nodeArgs[i+1]
		}
	}
	return "pebble, the default"
}
