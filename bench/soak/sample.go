package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/load"
)

// Sample is the cluster's state at one instant.
type Sample struct {
	At       time.Duration // since the soak started
	Phase    string        // "peak" or "steady"
	Produced uint64        // records handed to the client, in all phases
	Acked    uint64        // records acknowledged
	Failed   uint64        // records that failed
	RSS      [nodes]int64  // bytes resident (VmRSS) per node
	Anon     [nodes]int64  // of which anonymous (RssAnon: heap and stacks, not mapped files)
	Disk     [nodes]int64  // bytes of files under each node's data directory
}

// counting wraps a Target and counts its records.
type counting struct {
	load.Target
	produced, acked, failed atomic.Uint64
}

func (c *counting) Send(ctx context.Context, partition int, value []byte, done func(error)) error {
	err := c.Target.Send(ctx, partition, value, func(err error) {
		if err != nil {
			c.failed.Add(1)
		} else {
			c.acked.Add(1)
		}
		done(err)
	})
	if err == nil {
		c.produced.Add(1)
	}
	return err
}

// ErrNoVmRSS means /proc/<pid>/status lacks VmRSS or RssAnon.
var ErrNoVmRSS = errors.New("soak: no VmRSS or RssAnon in /proc status")

// readRSS returns process pid's resident bytes (VmRSS) and the anonymous
// part of them (RssAnon; the rest is mapped files, such as bbolt's).
func readRSS(pid int) (rss, anon int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "RssAnon") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("soak: /proc/%d/status %s: %w", pid, name, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			anon = kb << 10
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("%w: pid %d", ErrNoVmRSS, pid)
	}
	return rss, anon, nil
}

// dirSize sums the sizes of the regular files under dir. Files that vanish
// during the walk (deleted segments) are skipped.
func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}

// sampler takes a Sample every interval until stopped.
type sampler struct {
	start    time.Time
	pids     []int
	dataDirs []string
	counts   *counting
	phase    atomic.Pointer[string]

	mu      sync.Mutex // guards samples
	samples []Sample
}

// take reads one Sample now.
func (s *sampler) take() (Sample, error) {
	smp := Sample{At: time.Since(s.start), Phase: *s.phase.Load(),
		Produced: s.counts.produced.Load(), Acked: s.counts.acked.Load(), Failed: s.counts.failed.Load()}
	for i := range nodes {
		var err error
		if smp.RSS[i], smp.Anon[i], err = readRSS(s.pids[i]); err != nil {
			return smp, fmt.Errorf("node %d: %w", i+1, err)
		}
		if smp.Disk[i], err = dirSize(s.dataDirs[i]); err != nil {
			return smp, fmt.Errorf("node %d: %w", i+1, err)
		}
	}
	s.mu.Lock()
	s.samples = append(s.samples, smp)
	s.mu.Unlock()
	return smp, nil
}

// run samples every interval until ctx ends. After each sample it calls
// check, which may stop the soak (a disk budget).
func (s *sampler) run(ctx context.Context, interval time.Duration, check func(Sample, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		check(s.take())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Samples returns a copy of the samples taken.
func (s *sampler) Samples() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.samples...)
}
