package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/clusters"
	"github.com/minikafka/minikafka-go/bench/internal/load"
	"github.com/minikafka/minikafka-go/bench/internal/proc"
	"github.com/minikafka/minikafka-go/bench/internal/report"
	"github.com/minikafka/minikafka-go/bench/internal/targets"
)

const (
	topic   = "bench" // our topic, and the JetStream subject
	stream  = "BENCH"
	servers = 3
)

// systems describes what each system is and promises.
var systems = []report.System{
	{Key: report.Ours, Name: "minikafka", Client: "our client (idempotent, acks=all)",
		Durability: "Raft commit: fsynced in the Raft log (bbolt) of 2 of 3 replicas and applied by the leader"},
	{Key: report.Franz, Name: "minikafka/kgo", Client: "franz-go kgo (idempotent, acks=all)",
		Durability: "same cluster and guarantee as minikafka"},
	{Key: report.JSAlways, Name: "js-always", Client: "nats.go async publish",
		Durability: "Raft commit: fsynced in the Raft WAL of 2 of 3 servers (sync_interval: always)"},
	{Key: report.JSDefault, Name: "js-default", Client: "nats.go async publish",
		Durability: "Raft commit in the page cache of 2 of 3 servers; fsync every 2 min (default): acked data can be lost if 2 servers lose power"},
}

// target is one system ready to be measured.
type target struct {
	key   string
	mk    func(size int) (targets.Target, error) // a fresh client for one run
	meter load.Meter                             // CPU of the servers
	// epochs, if set, returns a number that grows with every leader
	// election of the system's partitions.
	epochs func(context.Context) (int64, error)
}

// bench carries one invocation's state.
type bench struct {
	o       options
	rep     *report.Report
	bar     *progress
	ticks   int64 // progress units done by finished runs (1 unit = 100ms of run time)
	perRun  int64 // progress units per run
	ourPeak map[int]float64
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
	b := &bench{o: o, ourPeak: map[int]float64{}, rep: &report.Report{
		Started: time.Now().UTC(),
		Host: report.Host{GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH,
			Note: "clients and all servers of one system share this machine's CPUs; systems run one after another"},
		Settings: report.Settings{Warmup: o.warmup.String(), Duration: o.duration.String(), WindowBytes: o.windowBytes,
			Partitions: o.partitions, Servers: servers, Replicas: servers, Quick: o.quick, FixedRate: o.rate},
		Systems: systems,
	}}
	if o.ourBatchSize > 0 {
		b.rep.Settings.OurClient += fmt.Sprintf("BatchSize(%d) ", o.ourBatchSize)
	}
	if o.ourLinger >= 0 {
		b.rep.Settings.OurClient += fmt.Sprintf("Linger(%v) ", o.ourLinger)
	}
	if len(o.nodeArgs) > 0 {
		b.rep.Settings.NodeArgs = fmt.Sprint(o.nodeArgs)
	}
	b.perRun = int64((o.warmup + o.duration) / (100 * time.Millisecond))
	runs := len(o.systems) * len(o.sizes)
	if o.halfLoad {
		runs *= 2
	}
	b.bar = newProgress(stderr, int64(runs)*b.perRun)
	defer b.bar.finish()

	dataDir, err := filepath.Abs(filepath.Join(o.out, "data"))
	if err != nil {
		return err
	}
	if !o.keepData {
		defer os.RemoveAll(dataDir)
	}

	var errs []error
	if o.has(report.Ours) || o.has(report.Franz) {
		errs = append(errs, b.minikafka(ctx, dataDir))
	}
	for _, js := range []struct {
		key    string
		always bool
	}{{report.JSAlways, true}, {report.JSDefault, false}} {
		if o.has(js.key) && ctx.Err() == nil {
			errs = append(errs, b.jetstream(ctx, dataDir, js.key, js.always))
		}
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

// minikafka runs our client and franz-go against a fresh MiniKafka cluster.
func (b *bench) minikafka(ctx context.Context, dataDir string) error {
	bin, err := filepath.Abs(filepath.Join(b.o.out, "bin", "minikafka-node"))
	if err != nil {
		return err
	}
	repo, err := filepath.Abs(b.o.repo)
	if err != nil {
		return err
	}
	b.bar.step("building cmd/node")
	if err := clusters.BuildNode(ctx, repo, bin); err != nil {
		return err
	}
	b.bar.step("starting MiniKafka cluster")
	logs, _ := filepath.Abs(filepath.Join(b.o.out, "logs"))
	c, err := clusters.StartMiniKafka(ctx, clusters.MiniKafkaConfig{
		Bin: bin, RepoDir: repo, DataDir: filepath.Join(dataDir, "minikafka"), LogDir: logs, Nodes: servers, Args: b.o.nodeArgs,
	})
	if err != nil {
		return fmt.Errorf("minikafka cluster: %w", err)
	}
	defer c.Stop(context.Background())
	if err := c.CreateTopic(ctx, topic, int32(b.o.partitions)); err != nil {
		return err
	}
	meter := func() (float64, error) { return proc.CPUSeconds(c.PIDs()...) }
	epochs := func(ctx context.Context) (int64, error) { return c.LeaderEpochs(ctx, topic) }
	var ts []target
	if b.o.has(report.Ours) {
		ts = append(ts, target{key: report.Ours, meter: meter, epochs: epochs, mk: func(int) (targets.Target, error) {
			return targets.NewOurs(c.Brokers(), topic, b.o.ourOpts()...)
		}})
	}
	if b.o.has(report.Franz) {
		ts = append(ts, target{key: report.Franz, meter: meter, epochs: epochs, mk: func(size int) (targets.Target, error) {
			return targets.NewFranz(c.Brokers(), topic, b.o.window(size))
		}})
	}
	b.measureAll(ctx, ts...)
	b.bar.step("stopping MiniKafka cluster")
	return ctx.Err()
}

// jetstream runs the JetStream client against a fresh JetStream cluster.
func (b *bench) jetstream(ctx context.Context, dataDir, key string, always bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	b.bar.step("starting " + key + " cluster")
	logs, _ := filepath.Abs(filepath.Join(b.o.out, "logs"))
	c, err := clusters.StartJetStream(ctx, clusters.JetStreamConfig{
		Self: self, DataDir: filepath.Join(dataDir, key), LogDir: logs, Name: key, Servers: servers, SyncAlways: always,
	})
	if err != nil {
		return fmt.Errorf("%s cluster: %w", key, err)
	}
	defer c.Stop(context.Background())
	leader, err := c.CreateStream(ctx, stream, []string{topic}, servers)
	if err != nil {
		return fmt.Errorf("%s stream: %w", key, err)
	}
	b.measureAll(ctx, target{
		key:   key,
		meter: func() (float64, error) { return proc.CPUSeconds(c.PIDs()...) },
		mk: func(size int) (targets.Target, error) {
			return targets.NewJetStream([]targets.Route{{URL: leader, Subject: topic}}, b.o.window(size))
		},
	})
	b.bar.step("stopping " + key + " cluster")
	return ctx.Err()
}

// measureAll runs every target at peak for every size, then at half of our
// client's peak.
func (b *bench) measureAll(ctx context.Context, ts ...target) {
	for _, size := range b.o.sizes {
		for _, t := range ts {
			b.measure(ctx, t, report.Peak, size, 0)
		}
	}
	if !b.o.halfLoad {
		return
	}
	for _, size := range b.o.sizes {
		for _, t := range ts {
			peak, ok := b.ourPeak[size]
			if b.o.rate > 0 {
				peak, ok = 2*b.o.rate, true
			}
			if !ok || peak <= 0 {
				b.bar.note("no peak of our client at %s: skipping the half-load run of %s", report.SizeLabel(size), t.key)
				b.ticks += b.perRun
				continue
			}
			b.measure(ctx, t, report.HalfLoad, size, peak/2)
		}
	}
}

// measure makes one run and adds it to the report.
func (b *bench) measure(ctx context.Context, tg target, mode string, size int, rate float64) {
	defer func() { b.ticks += b.perRun; b.bar.set(b.ticks) }()
	if ctx.Err() != nil {
		return
	}
	key := tg.key
	name := fmt.Sprintf("%s %s %s", key, mode, report.SizeLabel(size))
	b.bar.step(name)
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(i*7 + 13) // not all zero; compression is off everywhere anyway
	}
	window := b.o.window(size)
	elections, epoch0 := int64(-1), int64(0)
	if tg.epochs != nil {
		if e, err := tg.epochs(ctx); err == nil {
			epoch0, elections = e, 0
		}
	}
	t, err := tg.mk(size)
	if err != nil {
		b.failed = true
		b.rep.Add(key, mode, size, window, rate, elections, load.Result{}, err)
		return
	}
	res, runErr := load.Run(ctx, t, load.Spec{
		Value: value, Window: window, Rate: rate, Warmup: b.o.warmup, Duration: b.o.duration, Servers: tg.meter,
		Tick: func(e time.Duration) { b.bar.set(b.ticks + min(int64(e/(100*time.Millisecond)), b.perRun)) },
	})
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	runErr = errors.Join(runErr, t.Close(cctx))
	cancel()
	if elections == 0 {
		if e, err := tg.epochs(ctx); err == nil {
			elections = e - epoch0
		} else {
			elections = -1
		}
	}
	b.rep.Add(key, mode, size, window, rate, elections, res, runErr)
	if runErr != nil || res.Errors > 0 || res.Records == 0 {
		b.failed = true
		b.bar.note("%s: %d errors (first: %v), run error: %v", name, res.Errors, res.FirstErr, runErr)
	}
	if elections > 0 {
		b.bar.note("%s: leadership changed %d time(s) during the run", name, elections)
	}
	if key == report.Ours && mode == report.Peak && runErr == nil && res.Errors == 0 {
		b.ourPeak[size] = res.RecordsPerSec()
	}
}
