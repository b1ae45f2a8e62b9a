// Package diskprobe times small fdatasyncs on the disk under a benchmark
// while it runs, so that a window without acknowledgements can be laid
// beside what the disk did then: a system that syncs on commit cannot
// acknowledge while the disk stalls every sync.
package diskprobe

import (
	"errors"
	"os"
	"sync"
	"time"
)

// Stall is one probe sync that took at least the probe's threshold.
type Stall struct {
	Start time.Time
	Took  time.Duration
}

// End is when the stalled sync returned.
func (s Stall) End() time.Time { return s.Start.Add(s.Took) }

// Result is what a probe saw between Start and Stop.
type Result struct {
	Syncs  int           // fdatasyncs made
	Max    time.Duration // the slowest
	Stalls []Stall       // those at or over the threshold, in order
}

// Probe writes 4 KiB and syncs it every interval from its own goroutine,
// which Stop ends.
type Probe struct {
	f         *os.File
	every     time.Duration
	threshold time.Duration
	stop      chan struct{}
	done      chan struct{}

	mu  sync.Mutex // guards res, written by the probe goroutine and read by Stop
	res Result
}

// Start creates a probe file in dir and begins syncing it every interval;
// syncs taking threshold or more are kept as stalls.
func Start(dir string, every, threshold time.Duration) (*Probe, error) {
	if every <= 0 || threshold <= 0 {
		return nil, errors.New("diskprobe: interval and threshold must be positive")
	}
	f, err := os.CreateTemp(dir, "diskprobe-*")
	if err != nil {
		return nil, err
	}
	p := &Probe{f: f, every: every, threshold: threshold, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p, nil
}

func (p *Probe) loop() {
	defer close(p.done)
	buf := make([]byte, 4096)
	t := time.NewTicker(p.every)
	defer t.Stop()
	for off := int64(0); ; off = (off + int64(len(buf))) % (1 << 20) {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		start := time.Now()
		if _, err := p.f.WriteAt(buf, off); err != nil {
			return
		}
		if err := fdatasync(p.f); err != nil {
			return
		}
		p.record(start, time.Since(start))
	}
}

func (p *Probe) record(start time.Time, took time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.res.Syncs++
	p.res.Max = max(p.res.Max, took)
	if took >= p.threshold {
		p.res.Stalls = append(p.res.Stalls, Stall{Start: start, Took: took})
	}
}

// Stop ends the probe, removes its file and returns what it saw.
func (p *Probe) Stop() Result {
	close(p.stop)
	<-p.done
	name := p.f.Name()
	p.f.Close()
	os.Remove(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res
}

// Window is a stretch of time without an acknowledgement.
type Window struct{ From, To time.Time }

// Overlapping counts the windows that a stall overlaps.
func Overlapping(stalls []Stall, windows []Window) int {
	n := 0
	for _, w := range windows {
		for _, s := range stalls {
			if s.Start.Before(w.To) && s.End().After(w.From) {
				n++
				break
			}
		}
	}
	return n
}
