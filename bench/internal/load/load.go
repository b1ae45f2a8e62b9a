// Package load drives one producer client at a benchmark's workload and
// measures it: records and bytes acknowledged, produce-to-ack latency, and
// the CPU time of the servers and of this process.
//
// A caller's duties, in order:
//
//  1. Wrap the client in a Target (Send must not wait for the ack; it calls
//     done exactly once per accepted record).
//  2. Describe the run in a Spec: the record value, the number of
//     partitions (records go to them round robin), the window (records
//     outstanding at most), the offered rate (0 = peak: as fast as the
//     window allows), warm-up and measured durations.
//  3. Call Run. It sends for Warmup+Duration, counts only acks that arrive
//     during the measured Duration, then waits (up to Spec.Drain) for every
//     outstanding ack, so that the next run starts from an idle client.
//  4. Close the Target. Run does not.
//
// Latency is measured from the record's send time in peak mode and from its
// scheduled time in rate mode, so a client or server that falls behind the
// offered load shows it in the latency rather than hiding it (no
// coordinated omission).
package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/hist"
	"github.com/minikafka/minikafka-go/bench/internal/proc"
)

// Target is one producer client under test.
type Target interface {
	// Send hands one record for partition (0 to Spec.Partitions-1) to the
	// client and returns without waiting for its acknowledgement. If it
	// returns nil, done is called exactly once, from any goroutine, with
	// the outcome; if it returns an error, done is never called.
	Send(ctx context.Context, partition int, value []byte, done func(error)) error
}

// Meter reads cumulative CPU seconds of a set of processes.
type Meter func() (float64, error)

// Spec describes one run.
type Spec struct {
	Value []byte // every record's value
	// Partitions the records are spread over, round robin: record i goes
	// to partition i mod Partitions. 0 means 1.
	Partitions int
	Window     int           // records sent and not yet acknowledged, at most
	Rate       float64       // records per second offered; 0 = peak
	Warmup     time.Duration // sent but not measured
	Duration   time.Duration // measured
	Drain      time.Duration // longest wait for outstanding acks at the end; default 30s
	Servers    Meter         // CPU of the servers; nil = not measured
	// Tick, if set, is called about ten times a second with the time since
	// the run started (warm-up included).
	Tick func(elapsed time.Duration)
}

// Result is what one run measured, over its measured window only.
type Result struct {
	Start     time.Time     // start of the measured window
	Records   uint64        // acknowledged
	Bytes     uint64        // value bytes acknowledged
	Elapsed   time.Duration // length of the measured window
	Latency   hist.Snapshot // produce-to-ack
	Errors    uint64        // records that failed, warm-up included
	FirstErr  error         // the first failure, if any
	ServerCPU float64       // CPU seconds of the servers
	ClientCPU float64       // CPU seconds of this process
	// OtherCPU is the CPU seconds the rest of the machine used: a run
	// that competed with other work says so here.
	OtherCPU float64
	// Timeline has one Slot per SlotWidth of the measured window (the
	// last one may be partial): acks and the slowest ack in each, to show
	// stalls that percentiles hide.
	Timeline []Slot
	// Stalls are the spans of the measured window longer than SlotWidth
	// without an acknowledgement (from its start to the first ack, between
	// two acks, from the last ack to its end): each holds a SlotWidth
	// window, wherever it starts, in which nothing was acknowledged. At
	// most maxStalls are kept; StallCount counts them all.
	Stalls     []Span
	StallCount int
	// LongestGap is the longest time in the measured window without an
	// acknowledgement, counting from the window's start and to its end.
	LongestGap time.Duration
}

// SlotWidth is the width of a Timeline slot, and the least gap between
// acknowledgements that counts as a stall.
const SlotWidth = 100 * time.Millisecond

// Span is a stretch of the measured window, as offsets from its start.
type Span struct{ From, To time.Duration }

// maxStalls bounds the stalls a run keeps for the disk probe's verdict.
const maxStalls = 10000

// Slot is what was acknowledged in one SlotWidth of the measured window.
type Slot struct {
	Records uint64
	Max     time.Duration // slowest produce-to-ack latency
}

// RecordsPerSec is the acknowledged record rate.
func (r Result) RecordsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Records) / r.Elapsed.Seconds()
}

// MBPerSec is the acknowledged value bytes per second, in MB (10^6 bytes).
func (r Result) MBPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds()
}

// ErrDrainTimeout means records were still unacknowledged Spec.Drain after
// the run ended.
var ErrDrainTimeout = errors.New("load: outstanding records not acknowledged in time")

// ErrBadSpec is returned for a Spec that cannot be run.
var ErrBadSpec = errors.New("load: bad spec")

// Run drives t as s describes. It returns an error only when the run could
// not be measured (bad spec, ctx ended, acks never came); failed records are
// counted in Result.Errors.
func Run(ctx context.Context, t Target, s Spec) (Result, error) {
	switch {
	case s.Window < 1:
		return Result{}, fmt.Errorf("%w: window %d", ErrBadSpec, s.Window)
	case s.Rate < 0:
		return Result{}, fmt.Errorf("%w: rate %v", ErrBadSpec, s.Rate)
	case s.Duration <= 0 || s.Warmup < 0:
		return Result{}, fmt.Errorf("%w: durations %v/%v", ErrBadSpec, s.Warmup, s.Duration)
	case s.Partitions < 0:
		return Result{}, fmt.Errorf("%w: partitions %d", ErrBadSpec, s.Partitions)
	}
	s.Partitions = max(s.Partitions, 1)
	if s.Drain <= 0 {
		s.Drain = 30 * time.Second
	}
	m := &meter{lat: hist.New(), size: uint64(len(s.Value)), slots: make([]slot, int(s.Duration/SlotWidth)+50)}
	sem := make(chan struct{}, s.Window) // a token per outstanding record
	stop := make(chan struct{})
	var wg sync.WaitGroup
	begin := time.Now()
	wg.Go(func() { send(ctx, t, s, begin, sem, stop, m) })

	res, err := measure(ctx, s, begin, m)
	close(stop)
	wg.Wait()
	drainErr := drain(ctx, sem, s.Window, s.Drain)
	m.collect(&res)
	return res, errors.Join(err, drainErr)
}

// measure waits out the warm-up, then opens m's measured window for
// s.Duration, reading the CPU meters at both ends. It returns the window's
// start, length and CPU figures; it stops early if ctx ends or the
// servers' meter fails.
func measure(ctx context.Context, s Spec, begin time.Time, m *meter) (Result, error) {
	var res Result
	var cpu0, self0, all0 float64
	var t0 time.Time
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	phase := time.NewTimer(s.Warmup) // fires at the end of the warm-up, then of the measured window
	defer phase.Stop()
	measuring := false
	for {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-tick.C: // progress only
			if s.Tick != nil {
				s.Tick(time.Since(begin))
			}
		case <-phase.C:
			if !measuring {
				measuring = true
				var err error
				if cpu0, err = sample(s.Servers); err != nil {
					return res, err
				}
				self0 = proc.SelfCPUSeconds()
				all0, _ = proc.MachineBusySeconds()
				t0 = time.Now()
				res.Start = t0
				m.t0.Store(&t0)
				m.measuring.Store(true)
				// The window is Duration long even if the warm-up ran late.
				phase.Reset(s.Duration)
				continue
			}
			m.measuring.Store(false)
			res.Elapsed = time.Since(t0)
			cpu1, err := sample(s.Servers)
			res.ServerCPU, res.ClientCPU = cpu1-cpu0, proc.SelfCPUSeconds()-self0
			if all1, e := proc.MachineBusySeconds(); e == nil && all0 > 0 {
				res.OtherCPU = max(all1-all0-res.ServerCPU-res.ClientCPU, 0)
			}
			return res, err
		}
	}
}

func sample(m Meter) (float64, error) {
	if m == nil {
		return 0, nil
	}
	return m()
}

// meter collects acks from the clients' goroutines.
type meter struct {
	lat       *hist.Histogram
	size      uint64
	measuring atomic.Bool   // acks now fall in the measured window
	records   atomic.Uint64 // acked in the measured window
	errors    atomic.Uint64
	firstErr  atomic.Pointer[error]
	t0        atomic.Pointer[time.Time] // start of the measured window
	slots     []slot
	lastAck   atomic.Int64 // latest ack in the measured window, ns after t0
	maxGap    atomic.Int64 // longest ns between acks in the measured window

	smu    sync.Mutex // guards stalls and nstall (taken only for a stall)
	stalls []Span
	nstall int
}

type slot struct {
	records atomic.Uint64
	max     atomic.Int64 // nanoseconds
}

func (m *meter) ack(start time.Time, err error) {
	if err != nil {
		m.errors.Add(1)
		m.firstErr.CompareAndSwap(nil, &err)
		return
	}
	if !m.measuring.Load() {
		return
	}
	now := time.Now()
	lat := now.Sub(start)
	m.lat.Record(lat)
	m.records.Add(1)
	if t0 := m.t0.Load(); t0 != nil {
		off := now.Sub(*t0)
		m.gap(int64(off))
		if i := int(off / SlotWidth); i >= 0 && i < len(m.slots) {
			sl := &m.slots[i]
			sl.records.Add(1)
			raise(&sl.max, int64(lat))
		}
	}
}

// gap moves lastAck forward to off (ns after t0), raising maxGap to the
// time since the previous ack. Acks reported out of order by concurrent
// callers do not move it back.
func (m *meter) gap(off int64) {
	for {
		prev := m.lastAck.Load()
		if off <= prev {
			return
		}
		if m.lastAck.CompareAndSwap(prev, off) {
			raise(&m.maxGap, off-prev)
			if off-prev > int64(SlotWidth) {
				m.noteStall(Span{time.Duration(prev), time.Duration(off)})
			}
			return
		}
	}
}

// raise sets a to v if v is larger.
func raise(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// noteStall records a gap of more than SlotWidth between acks.
func (m *meter) noteStall(sp Span) {
	m.smu.Lock()
	defer m.smu.Unlock()
	m.nstall++
	if len(m.stalls) < maxStalls {
		m.stalls = append(m.stalls, sp)
	}
}

// collect copies what the acks recorded into res: counts, latency, errors,
// the timeline of the measured window (res.Elapsed, set by measure) and
// its stalls.
func (m *meter) collect(res *Result) {
	res.Records, res.Bytes = m.records.Load(), m.records.Load()*m.size
	res.Latency = m.lat.Snapshot()
	res.Errors = m.errors.Load()
	n := min(int((res.Elapsed+SlotWidth-1)/SlotWidth), len(m.slots))
	for i := range n {
		sl := Slot{Records: m.slots[i].records.Load(), Max: time.Duration(m.slots[i].max.Load())}
		res.Timeline = append(res.Timeline, sl)
	}
	if res.Elapsed > 0 {
		last := m.lastAck.Load()
		res.LongestGap = time.Duration(max(m.maxGap.Load(), int64(res.Elapsed)-last))
		if res.Elapsed-time.Duration(last) > SlotWidth {
			m.noteStall(Span{time.Duration(last), res.Elapsed})
		}
	}
	m.smu.Lock()
	res.Stalls, res.StallCount = slices.Clone(m.stalls), m.nstall
	m.smu.Unlock()
	if e := m.firstErr.Load(); e != nil {
		res.FirstErr = *e
	}
}

// send offers records until stop: each takes a window token first, and in
// rate mode waits for its scheduled time.
func send(ctx context.Context, t Target, s Spec, begin time.Time, sem chan struct{}, stop <-chan struct{}, m *meter) {
	sched := newSchedule(begin, s.Rate)
	timer := time.NewTimer(time.Hour) // reused for every pacing wait
	defer timer.Stop()
	for i := uint64(0); ; i++ {
		var start time.Time
		if sched.paced() {
			due := sched.due(i)
			if d := time.Until(due); d > 0 {
				timer.Reset(d) // since Go 1.23 Reset needs no drain
				select {
				case <-stop:
					return
				case <-timer.C:
				}
			}
			start = due
		}
		select {
		case <-stop:
			return
		case sem <- struct{}{}:
		}
		if !sched.paced() {
			start = time.Now()
		}
		err := t.Send(ctx, int(i%uint64(s.Partitions)), s.Value, func(err error) {
			m.ack(start, err)
			<-sem
		})
		if err != nil {
			<-sem
			m.ack(start, err)
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond): // do not spin on a broken client
			}
		}
	}
}

// drain takes back every window token: then nothing is outstanding.
func drain(ctx context.Context, sem chan struct{}, window int, limit time.Duration) error {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for n := 0; n < window; n++ {
		select {
		case sem <- struct{}{}:
		case <-timer.C:
			return fmt.Errorf("%w: %d after %v", ErrDrainTimeout, window-n, limit)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
