package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/load"
	"github.com/minikafka/minikafka-go/bench/internal/proc"
	"github.com/minikafka/minikafka-go/bench/internal/report"
	"github.com/minikafka/minikafka-go/bench/internal/targets"
)

const (
	topic   = "bench" // our topic, and the prefix of the JetStream subjects
	stream  = "BENCH" // prefix of the JetStream streams
	servers = 3
)

// describeSystems says what each system is and what its ack promises;
// store is the partitions' Raft log store the nodes run with.
func describeSystems(store string) []report.System {
	return []report.System{
		{Key: report.Ours, Name: "minikafka", Client: "our client (idempotent, acks=all)",
			Durability: "Raft commit: fsynced in the Raft log (" + store + ") of 2 of 3 replicas and applied by the leader"},
		{Key: report.Franz, Name: "minikafka/kgo", Client: "franz-go kgo (idempotent, acks=all)",
			Durability: "same cluster and guarantee as minikafka"},
		{Key: report.FranzTxn, Name: "minikafka/kgo-txn", Client: "franz-go kgo transactional producers (transactions of " + strconv.Itoa(targets.TxnRecords) + " records)",
			Durability: "same cluster as minikafka; a record counts when its transaction's commit is acknowledged (EndTxn)"},
		{Key: report.OursCached, Name: "minikafka-cached", Client: "our client (idempotent, acks=all)",
			Durability: "topic write.caching=true: Raft commit in the memory of 2 of 3 replicas, fsynced within flush.ms (100 ms unless set); " +
				"only the pebble log store honours it (log store here: " + store + "; boltdb and wal fsync before the ack)"},
		{Key: report.OursTLS, Name: "minikafka-tls", Client: "our client (idempotent, acks=all) over SASL_SSL (SCRAM-SHA-512)",
			Durability: "same as minikafka; the nodes run configs/secure's settings: Kafka only on SASL_SSL, mutual TLS on the Raft port, encrypted gossip"},
		{Key: report.JSAlways, Name: "js-always", Client: "nats.go async publish",
			Durability: "Raft commit: fsynced in the Raft WAL of 2 of 3 servers (sync_interval: always)"},
		{Key: report.JSDefault, Name: "js-default", Client: "nats.go async publish",
			Durability: "Raft commit in the page cache of 2 of 3 servers; fsync every 2 min (default): acked data can be lost if 2 servers lose power"},
	}
}

// target is one system ready to be measured.
type target struct {
	key     string
	parts   int                                    // partitions (streams) records are spread over
	leaders map[string]int                         // partitions led per server, from the cluster
	mk      func(size int) (targets.Target, error) // a fresh client for one run
	meter   load.Meter                             // CPU of the servers
	// epochs, if set, returns a number that grows with every leader
	// election of the system's partitions.
	epochs func(context.Context) (int64, error)
}

// peakKey identifies our client's peak at one size and partition count.
type peakKey struct{ size, parts int }

// bench carries one invocation's state.
type bench struct {
	o       options
	rep     *report.Report
	bar     *progress
	ticks   int64 // progress units done by finished runs (1 unit = 100ms of run time)
	perRun  int64 // progress units per run
	ourPeak map[peakKey]float64
	nodeBin string // the built cmd/node; "" until built
	dataDir string
	failed  bool
}

func run(args []string) int {
	o, err := parseOptions(args, os.Stderr)
	if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := execute(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	return 0
}

func execute(ctx context.Context, o options, stdout, stderr io.Writer) error {
	for _, d := range []string{"bin", "logs", "data"} {
		if err := os.MkdirAll(filepath.Join(o.out, d), 0o755); err != nil {
			return err
		}
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	dataDir, err := filepath.Abs(filepath.Join(o.out, "data"))
	if err != nil {
		return err
	}
	if !o.keepData {
		defer os.RemoveAll(dataDir)
	}
	b := newBench(o, dataDir, stderr)
	defer b.bar.finish()

	var errs []error
	for _, parts := range o.partitions {
		errs = append(errs, b.allSystems(ctx, parts)...)
	}
	b.bar.finish()

	b.rep.Compare()
	if err := b.rep.WriteTable(stdout); err != nil {
		return err
	}
	outs := []string{"results.json", "chart.png", "chart.svg"}
	errs = append(errs, b.rep.WriteJSON(filepath.Join(o.out, outs[0])))
	if len(b.rep.Runs) > 0 {
		errs = append(errs, b.rep.WriteChart(filepath.Join(o.out, outs[1])), b.rep.WriteChart(filepath.Join(o.out, outs[2])))
	}
	fmt.Fprintf(stdout, "\nwrote %s/{%s, %s, %s}; server logs in %s/logs\n", o.out, outs[0], outs[1], outs[2], o.out)
	if b.failed {
		errs = append(errs, errors.New("some runs failed; see the table and the server logs"))
	}
	return errors.Join(errs...)
}

// newBench sets up the report and the progress bar of an invocation.
func newBench(o options, dataDir string, stderr io.Writer) *bench {
	b := &bench{o: o, dataDir: dataDir, ourPeak: map[peakKey]float64{}, rep: &report.Report{
		Started: time.Now().UTC(),
		Host: report.Host{GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH,
			Note: "clients and all servers of one system share this machine's CPUs; systems run one after another"},
		Settings: report.Settings{Warmup: o.warmup.String(), Duration: o.duration.String(), WindowBytes: o.windowBytes,
			Partitions: o.partitions, Servers: servers, Replicas: servers, Quick: o.quick, FixedRate: o.rate},
		Systems: describeSystems(o.logStore()),
	}}
	if on, order := proc.PageReporting(); on {
		b.rep.Host.PageReporting, b.rep.Host.PageReportingOrder = true, order
	}
	if o.ourBatchSize > 0 {
		b.rep.Settings.OurClient += fmt.Sprintf("BatchSize(%d) ", o.ourBatchSize)
	}
	if o.ourLinger >= 0 {
		b.rep.Settings.OurClient += fmt.Sprintf("Linger(%v) ", o.ourLinger)
	}
	if len(o.nodeArgs) > 0 {
		b.rep.Settings.NodeArgs = fmt.Sprint(o.nodeArgs)
	}
	if o.has(report.OursCached) {
		b.rep.Settings.CachedTopicConfigs = maps.Clone(o.cachedConfigs)
	}
	if o.has(report.FranzTxn) {
		b.rep.Settings.TxnRecords = targets.TxnRecords
		for _, size := range o.sizes {
			b.rep.Settings.TxnProducers = append(b.rep.Settings.TxnProducers, txnProducers(o.txnProducers, o.window(size)))
		}
	}
	b.perRun = int64((o.warmup + o.duration) / (100 * time.Millisecond))
	b.bar = newProgress(stderr, int64(o.runs())*b.perRun)
	return b
}

// allSystems measures every system asked for with parts partitions, each
// on its own fresh cluster (minikafka/kgo shares minikafka's).
func (b *bench) allSystems(ctx context.Context, parts int) []error {
	var errs []error
	var ours []string
	for _, k := range []string{report.Ours, report.Franz, report.FranzTxn} {
		if b.o.has(k) {
			ours = append(ours, k)
		}
	}
	if len(ours) > 0 && ctx.Err() == nil {
		errs = append(errs, b.minikafka(ctx, parts, "minikafka", nil, ours...))
	}
	if b.o.has(report.OursCached) && ctx.Err() == nil {
		errs = append(errs, b.minikafka(ctx, parts, "minikafka-cached", b.o.cachedConfigs, report.OursCached))
	}
	if b.o.has(report.OursTLS) && ctx.Err() == nil {
		errs = append(errs, b.minikafka(ctx, parts, "minikafka-tls", nil, report.OursTLS))
	}
	for _, js := range []struct {
		key    string
		always bool
	}{{report.JSAlways, true}, {report.JSDefault, false}} {
		if b.o.has(js.key) && ctx.Err() == nil {
			errs = append(errs, b.jetstream(ctx, parts, js.key, js.always))
		}
	}
	return errs
}

// clusterName names a cluster's processes and logs.
func clusterName(name string, parts int) string {
	if parts == 1 {
		return name
	}
	return fmt.Sprintf("%s-p%d", name, parts)
}

// setupFailed records that keys could not be measured with parts
// partitions because of err, moves the progress bar past their runs, and
// returns err, naming the cluster.
func (b *bench) setupFailed(parts int, cluster string, err error, keys ...string) error {
	for _, k := range keys {
		b.rep.Fail(k, parts, err)
		b.ticks += int64(len(b.o.sizes)*b.o.modes()) * b.perRun
	}
	b.bar.set(b.ticks)
	err = fmt.Errorf("%s: %w", cluster, err)
	b.bar.note("%v", err)
	return err
}
