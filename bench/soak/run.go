package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/load"
	"github.com/minikafka/minikafka-go/bench/internal/targets"
)

// Phases, as the samples name them.
var (
	phasePeak   = "peak"
	phaseSteady = "steady"
)

// errDiskBudget means the data directories outgrew options.maxDisk.
var errDiskBudget = errors.New("soak: the data directories outgrew the disk budget")

// run is one soak: cluster, topic, peak, steady phase, outputs.
func run(ctx context.Context, o options) (err error) {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	c, err := startCluster(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = errors.Join(err, c.Stop(sctx))
		if !o.keepData {
			err = errors.Join(err, os.RemoveAll(filepath.Join(o.out, "cluster", "data")))
		}
	}()
	if err := createTopic(ctx, c, o); err != nil {
		return err
	}
	fmt.Printf("cluster up (brokers %v), topic %s: %d partitions, RF %d, retention.ms=%d, segment.bytes=%d\n",
		c.Brokers(), topic, o.partitions, nodes, o.retention.Milliseconds(), o.segmentBytes)
	fr, err := targets.NewFranz(c.Brokers(), topic, o.window)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		fr.Close(cctx)
	}()
	s := &sampler{start: time.Now(), pids: c.PIDs(), counts: &counting{Target: fr}}
	for id := 1; id <= nodes; id++ {
		s.dataDirs = append(s.dataDirs, filepath.Join(o.out, "cluster", "data", fmt.Sprintf("node%d", id)))
	}
	samples, runErr := drive(ctx, o, s)
	if err := writeOutputs(o, samples); err != nil {
		return errors.Join(runErr, err)
	}
	if errors.Is(runErr, errDiskBudget) {
		fmt.Printf("stopped early: %v (%s)\n", runErr, gib(o.maxDisk))
		return nil
	}
	return runErr
}

// drive runs the peak and steady phases while s samples, and returns the
// samples.
func drive(ctx context.Context, o options, s *sampler) ([]Sample, error) {
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	sctx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopSampling(); wg.Wait() }()
	s.phase.Store(&phasePeak)
	var lastPrint atomic.Int64
	wg.Go(func() {
		s.run(sctx, o.interval, func(smp Sample, err error) {
			if err != nil {
				fmt.Fprintln(os.Stderr, "soak: sample:", err)
				return
			}
			if total := smp.Disk[0] + smp.Disk[1] + smp.Disk[2]; total > o.maxDisk {
				cancelRun(errDiskBudget)
			}
			if smp.At-time.Duration(lastPrint.Load()) >= time.Minute || smp.At < o.interval {
				lastPrint.Store(int64(smp.At))
				fmt.Println(progressLine(smp))
			}
		})
	})

	value := make([]byte, o.valueSize)
	peak, err := load.Run(runCtx, s.counts, load.Spec{Value: value, Window: o.window, Warmup: 3 * time.Second, Duration: o.peak})
	if err != nil {
		return s.Samples(), errors.Join(err, context.Cause(runCtx))
	}
	rate := peak.RecordsPerSec() / 2
	fmt.Printf("peak: %.0f records/s (%.1f MB/s of values), %d errors; steady phase at %.0f records/s for %v\n",
		peak.RecordsPerSec(), peak.MBPerSec(), peak.Errors, rate, o.duration)
	s.phase.Store(&phaseSteady)
	steady, err := load.Run(runCtx, s.counts, load.Spec{Value: value, Window: o.window, Rate: rate, Duration: o.duration})
	if cause := context.Cause(runCtx); cause != nil {
		err = cause
	}
	fmt.Printf("steady: %.0f records/s acknowledged, %d errors (first: %v); latency p50 %v p99 %v\n",
		steady.RecordsPerSec(), steady.Errors, steady.FirstErr, steady.Latency.Quantile(0.5), steady.Latency.Quantile(0.99))
	stopSampling()
	wg.Wait()
	if _, serr := s.take(); serr != nil {
		err = errors.Join(err, serr)
	}
	return s.Samples(), err
}

// progressLine is one sample, briefly.
func progressLine(s Sample) string {
	return fmt.Sprintf("%8v %-6s acked %d, failed %d; RSS MiB %.0f/%.0f/%.0f (anon %.0f/%.0f/%.0f); disk MiB %.0f/%.0f/%.0f",
		s.At.Round(time.Second), s.Phase, s.Acked, s.Failed, mib(s.RSS[0]), mib(s.RSS[1]), mib(s.RSS[2]),
		mib(s.Anon[0]), mib(s.Anon[1]), mib(s.Anon[2]), mib(s.Disk[0]), mib(s.Disk[1]), mib(s.Disk[2]))
}

// writeOutputs writes soak.csv and soak.svg and prints the summary.
func writeOutputs(o options, samples []Sample) error {
	csvPath, svgPath := filepath.Join(o.out, "soak.csv"), filepath.Join(o.out, "soak.svg")
	f, err := os.Create(csvPath)
	if err != nil {
		return err
	}
	if err := errors.Join(writeCSV(f, samples), f.Close()); err != nil {
		return err
	}
	title := fmt.Sprintf("soak: %d partitions x RF %d, retention.ms=%d, segment.bytes=%d", o.partitions, nodes, o.retention.Milliseconds(), o.segmentBytes)
	g, err := os.Create(svgPath)
	if err != nil {
		return err
	}
	anon := series(samples, anonOf)
	for i := range anon {
		anon[i].Name += " anon"
		anon[i].Dashed = true
	}
	panels := []Panel{
		{Title: "data directory, MiB", Series: series(samples, diskOf)},
		{Title: "RSS, MiB (dashed: its anonymous part, RssAnon)", Series: append(series(samples, rssOf), anon...)},
	}
	if err := errors.Join(writeSVG(g, title, panels), g.Close()); err != nil {
		return err
	}
	var steady []Sample
	for _, s := range samples {
		if s.Phase == phaseSteady {
			steady = append(steady, s)
		}
	}
	fmt.Printf("\nsummary of the steady phase (%d samples; slope over its second half):\n%s", len(steady), summaryTable(steady))
	fmt.Printf("wrote %s and %s\n", csvPath, svgPath)
	return nil
}

// compile-time check: counting is a load.Target.
var _ load.Target = (*counting)(nil)
