package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/diskprobe"
	"github.com/minikafka/minikafka-go/bench/internal/load"
	"github.com/minikafka/minikafka-go/bench/internal/report"
)

// measureAll runs every target at peak for every size, then at half of our
// client's peak with as many partitions.
func (b *bench) measureAll(ctx context.Context, ts ...target) {
	if len(ts) > 0 && len(b.o.sizes) > 0 {
		b.warmCluster(ctx, ts[0], b.o.sizes[0])
	}
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
			peak, ok := b.ourPeak[peakKey{size, t.parts}]
			if b.o.rate > 0 {
				peak, ok = 2*b.o.rate, true
			}
			if !ok || peak <= 0 {
				b.bar.note("no peak of our client at %s, %d partition(s): skipping the half-load run of %s", report.SizeLabel(size), t.parts, t.key)
				b.ticks += b.perRun
				continue
			}
			b.measure(ctx, t, report.HalfLoad, size, peak/2)
		}
	}
}

// warmCluster sends with tg at peak for -cluster-warmup and discards the
// figures. A fresh MiniKafka cluster costs several times more server CPU
// per record until a few hundred MB are in its logs, which penalised
// whichever system ran first on it.
func (b *bench) warmCluster(ctx context.Context, tg target, size int) {
	if b.o.clusterWarmup <= 0 || ctx.Err() != nil {
		return
	}
	b.bar.step(fmt.Sprintf("warming up the cluster with %s for %v", tg.key, b.o.clusterWarmup))
	t, err := tg.mk(size)
	if err != nil {
		b.bar.note("cluster warm-up with %s: %v", tg.key, err)
		return
	}
	_, runErr := load.Run(ctx, t, load.Spec{
		Value: make([]byte, size), Partitions: tg.parts, Window: b.o.window(size),
		Warmup: b.o.clusterWarmup, Duration: 100 * time.Millisecond,
	})
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	runErr = errors.Join(runErr, t.Close(cctx))
	cancel()
	if runErr != nil {
		b.bar.note("cluster warm-up with %s: %v", tg.key, runErr)
	}
}

// The disk probe syncs 4 KiB every probeEvery beside each measured run; a
// sync of probeStall or more counts as a disk stall.
const (
	probeEvery = 50 * time.Millisecond
	probeStall = 50 * time.Millisecond
)

// diskSummary lays the probe's stalls beside the run's stalls.
func diskSummary(pr diskprobe.Result, res load.Result) report.DiskProbe {
	windows := make([]diskprobe.Window, len(res.Stalls))
	for i, sp := range res.Stalls {
		windows[i] = diskprobe.Window{From: res.Start.Add(sp.From), To: res.Start.Add(sp.To)}
	}
	return report.DiskProbe{MaxSync: pr.Max, Stalls: len(pr.Stalls),
		GapsOnStall: diskprobe.Overlapping(pr.Stalls, windows)}
}

// measure makes one run and adds it to the report.
func (b *bench) measure(ctx context.Context, tg target, mode string, size int, rate float64) {
	defer func() { b.ticks += b.perRun; b.bar.set(b.ticks) }()
	if ctx.Err() != nil {
		return
	}
	name := fmt.Sprintf("%s %s %s %dp", tg.key, mode, report.SizeLabel(size), tg.parts)
	b.bar.step(name)
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(i*7 + 13) // not all zero; compression is off everywhere anyway
	}
	info := report.RunInfo{System: tg.key, Mode: mode, Size: size, Partitions: tg.parts, Window: b.o.window(size),
		Offered: rate, Elections: -1, Leaders: tg.leaders}
	epoch0 := int64(0)
	if tg.epochs != nil {
		if e, err := tg.epochs(ctx); err == nil {
			epoch0, info.Elections = e, 0
		}
	}
	t, err := tg.mk(size)
	if err != nil {
		b.failed = true
		b.rep.Add(info, load.Result{}, err)
		return
	}
	probe, probeErr := diskprobe.Start(b.dataDir, probeEvery, probeStall)
	if probeErr != nil {
		b.bar.note("%s: no disk probe: %v", name, probeErr)
	}
	res, runErr := load.Run(ctx, t, load.Spec{
		Value: value, Partitions: tg.parts, Window: info.Window, Rate: rate, Warmup: b.o.warmup, Duration: b.o.duration,
		Servers: tg.meter,
		Tick:    func(e time.Duration) { b.bar.set(b.ticks + min(int64(e/(100*time.Millisecond)), b.perRun)) },
	})
	if probe != nil {
		info.Disk = diskSummary(probe.Stop(), res)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	runErr = errors.Join(runErr, t.Close(cctx))
	cancel()
	if info.Elections == 0 {
		if e, err := tg.epochs(ctx); err == nil {
			info.Elections = e - epoch0
		} else {
			info.Elections = -1
		}
	}
	b.rep.Add(info, res, runErr)
	b.noteRun(name, info, res, runErr)
}

// noteRun reports a run's failures, elections and stalls as they happen,
// and keeps our client's peak for the half-load runs.
func (b *bench) noteRun(name string, info report.RunInfo, res load.Result, runErr error) {
	if runErr != nil || res.Errors > 0 || res.Records == 0 {
		b.failed = true
		b.bar.note("%s: %d errors (first: %v), run error: %v", name, res.Errors, res.FirstErr, runErr)
	}
	if info.Elections > 0 {
		b.bar.note("%s: leadership changed %d time(s) during the run", name, info.Elections)
	}
	if res.StallCount > 0 {
		b.bar.note("%s: %d gap(s) of over 100 ms without an ack, longest %v; %d during a disk stall (slowest probe sync %v)",
			name, res.StallCount, res.LongestGap.Round(time.Millisecond), info.Disk.GapsOnStall, info.Disk.MaxSync.Round(time.Millisecond))
	}
	// Half load is half of our fsync client's peak; when only the cached
	// system of ours runs, half of its.
	base := info.System == report.Ours || (info.System == report.OursCached && !b.o.has(report.Ours))
	if base && info.Mode == report.Peak && runErr == nil && res.Errors == 0 {
		b.ourPeak[peakKey{info.Size, info.Partitions}] = res.RecordsPerSec()
	}
}
