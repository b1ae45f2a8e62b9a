package load

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTarget acks each record from a goroutine after delay, failing every
// failEvery-th (0 = never), and tracks the most records outstanding and
// the records sent to each partition.
type fakeTarget struct {
	delay     time.Duration
	failEvery uint64
	never     bool // never ack
	// holdFrom and holdUntil, if set: a record sent between them is
	// acknowledged at holdUntil, not after delay (a stalled server).
	holdFrom, holdUntil time.Time

	mu    sync.Mutex // guards parts
	parts map[int]int

	sent        atomic.Uint64
	outstanding atomic.Int64
	maxOut      atomic.Int64
	wg          sync.WaitGroup
}

var errFake = errors.New("fake failure")

func (f *fakeTarget) Send(_ context.Context, partition int, _ []byte, done func(error)) error {
	f.mu.Lock()
	if f.parts == nil {
		f.parts = map[int]int{}
	}
	f.parts[partition]++
	f.mu.Unlock()
	n := f.sent.Add(1)
	o := f.outstanding.Add(1)
	for {
		m := f.maxOut.Load()
		if o <= m || f.maxOut.CompareAndSwap(m, o) {
			break
		}
	}
	if f.never {
		return nil
	}
	delay := f.delay
	if now := time.Now(); now.After(f.holdFrom) && now.Before(f.holdUntil) {
		delay = f.holdUntil.Sub(now)
	}
	f.wg.Go(func() {
		time.Sleep(delay)
		f.outstanding.Add(-1)
		if f.failEvery > 0 && n%f.failEvery == 0 {
			done(errFake)
			return
		}
		done(nil)
	})
	return nil
}

func TestPeakCountsAndRespectsWindow(t *testing.T) {
	f := &fakeTarget{delay: time.Millisecond}
	var ticks atomic.Int32
	var cpuCalls atomic.Int32
	res, err := Run(context.Background(), f, Spec{
		Value: make([]byte, 100), Window: 16, Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond,
		Servers: func() (float64, error) { return float64(cpuCalls.Add(1)) * 1.5, nil },
		Tick:    func(time.Duration) { ticks.Add(1) },
	})
	f.wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Records == 0 || res.Bytes != res.Records*100 {
		t.Fatalf("records %d bytes %d", res.Records, res.Bytes)
	}
	if res.Records >= f.sent.Load() {
		t.Fatalf("measured %d of %d sent: warm-up acks must not count", res.Records, f.sent.Load())
	}
	if m := f.maxOut.Load(); m > 16 {
		t.Fatalf("%d outstanding, window 16", m)
	}
	if f.outstanding.Load() != 0 {
		t.Fatalf("%d still outstanding after Run", f.outstanding.Load())
	}
	var inSlots uint64
	for _, sl := range res.Timeline {
		inSlots += sl.Records
		if sl.Records > 0 && sl.Max < time.Millisecond {
			t.Fatalf("slot max %v below the target's 1ms delay", sl.Max)
		}
	}
	if inSlots != res.Records || len(res.Timeline) < 2 {
		t.Fatalf("timeline holds %d records in %d slots, want %d in 2 or 3", inSlots, len(res.Timeline), res.Records)
	}
	if res.Latency.Count != res.Records || res.Latency.Quantile(0.5) < time.Millisecond {
		t.Fatalf("latency count %d p50 %v; want %d samples >= 1ms", res.Latency.Count, res.Latency.Quantile(0.5), res.Records)
	}
	if res.ServerCPU != 1.5 || cpuCalls.Load() != 2 {
		t.Fatalf("server cpu %v from %d samples, want 1.5 from 2", res.ServerCPU, cpuCalls.Load())
	}
	if res.Elapsed < 200*time.Millisecond || res.Errors != 0 || ticks.Load() == 0 {
		t.Fatalf("elapsed %v errors %d ticks %d", res.Elapsed, res.Errors, ticks.Load())
	}
}

// A paced run never offers more than the schedule allows, however fast
// the target is; and latency is measured from the scheduled time.
func TestRateNeverExceedsSchedule(t *testing.T) {
	f := &fakeTarget{}
	begin := time.Now()
	_, err := Run(context.Background(), f, Spec{
		Value: []byte("x"), Window: 1000, Rate: 2000, Warmup: 20 * time.Millisecond, Duration: 150 * time.Millisecond,
	})
	elapsed := time.Since(begin)
	f.wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if limit := uint64(elapsed.Seconds()*2000) + 1; f.sent.Load() > limit {
		t.Fatalf("sent %d in %v at 2000/s (limit %d)", f.sent.Load(), elapsed, limit)
	}
	if f.sent.Load() == 0 {
		t.Fatal("nothing sent")
	}
}

func TestErrorsAreCounted(t *testing.T) {
	f := &fakeTarget{failEvery: 3}
	res, err := Run(context.Background(), f, Spec{Value: []byte("x"), Window: 4, Duration: 50 * time.Millisecond})
	f.wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors == 0 || !errors.Is(res.FirstErr, errFake) {
		t.Fatalf("errors %d first %v", res.Errors, res.FirstErr)
	}
}

func TestDrainTimeout(t *testing.T) {
	f := &fakeTarget{never: true}
	_, err := Run(context.Background(), f, Spec{Value: []byte("x"), Window: 3, Duration: 20 * time.Millisecond, Drain: 30 * time.Millisecond})
	if !errors.Is(err, ErrDrainTimeout) {
		t.Fatalf("err %v, want ErrDrainTimeout", err)
	}
	if f.sent.Load() != 3 {
		t.Fatalf("sent %d, want exactly the window (3)", f.sent.Load())
	}
}

func TestBadSpec(t *testing.T) {
	for _, s := range []Spec{{Window: 0, Duration: time.Second}, {Window: 1}, {Window: 1, Duration: 1, Rate: -1}} {
		if _, err := Run(context.Background(), &fakeTarget{}, s); !errors.Is(err, ErrBadSpec) {
			t.Errorf("%+v: err %v", s, err)
		}
	}
}

func TestSchedule(t *testing.T) {
	b := time.Unix(1000, 0)
	s := newSchedule(b, 4000)
	if !s.paced() || s.due(0) != b || s.due(4000) != b.Add(time.Second) || s.due(1) != b.Add(250*time.Microsecond) {
		t.Fatalf("due(0)=%v due(1)=%v due(4000)=%v", s.due(0), s.due(1), s.due(4000))
	}
	if newSchedule(b, 0).paced() {
		t.Fatal("rate 0 must be unpaced")
	}
}

// Records go to the partitions round robin, and a single partition is the
// default.
func TestPartitionsRoundRobin(t *testing.T) {
	f := &fakeTarget{}
	if _, err := Run(context.Background(), f, Spec{Value: []byte("x"), Window: 8, Partitions: 3, Duration: 30 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	f.wg.Wait()
	if len(f.parts) != 3 {
		t.Fatalf("partitions used %v, want 0, 1 and 2", f.parts)
	}
	lo, hi := f.parts[0], f.parts[0]
	for _, n := range f.parts {
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi-lo > 1 {
		t.Fatalf("per partition %v: not round robin", f.parts)
	}
	g := &fakeTarget{}
	if _, err := Run(context.Background(), g, Spec{Value: []byte("x"), Window: 8, Duration: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	g.wg.Wait()
	if len(g.parts) != 1 || g.parts[0] == 0 {
		t.Fatalf("default partitions %v, want all in 0", g.parts)
	}
}

// A pause of the acks shows as a stall and as the longest gap, also when
// it lasts to the end of the measured window, and also when it is shorter
// than two slots and straddles a slot boundary, leaving no whole slot empty
// (the old count, of empty aligned slots, missed that one).
func TestStallsCounted(t *testing.T) {
	for _, tc := range []struct {
		name           string
		from, until    time.Duration // of the hold, after the measured window starts
		minGap, maxGap time.Duration
	}{
		// Holds of 500 and 1100 ms: an ack recorded up to 100 ms late
		// (a loaded machine, -race) still leaves one stall.
		{"middle", 200 * time.Millisecond, 700 * time.Millisecond, 350 * time.Millisecond, 700 * time.Millisecond},
		{"to the end", 400 * time.Millisecond, 1500 * time.Millisecond, 450 * time.Millisecond, 800 * time.Millisecond},
		// 130 to 250 ms: slots 1 and 2 each keep acks on either side.
		{"across a slot boundary", 130 * time.Millisecond, 250 * time.Millisecond, 110 * time.Millisecond, 220 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warmup := 50 * time.Millisecond
			t0 := time.Now().Add(warmup)
			f := &fakeTarget{delay: time.Millisecond, holdFrom: t0.Add(tc.from), holdUntil: t0.Add(tc.until)}
			res, err := Run(context.Background(), f, Spec{Value: []byte("x"), Window: 4, Warmup: warmup, Duration: time.Second})
			f.wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if res.StallCount != 1 || len(res.Stalls) != 1 {
				t.Fatalf("%d stalls (%v kept), want the hold's one", res.StallCount, res.Stalls)
			}
			if sp := res.Stalls[0]; sp.To-sp.From != res.LongestGap {
				t.Errorf("stall %v, longest gap %v: not the same span", sp, res.LongestGap)
			}
			if res.LongestGap < tc.minGap || res.LongestGap > tc.maxGap {
				t.Errorf("longest gap %v, want %v to %v", res.LongestGap, tc.minGap, tc.maxGap)
			}
			if want := int((res.Elapsed + SlotWidth - 1) / SlotWidth); len(res.Timeline) != want {
				t.Errorf("timeline of %d slots for %v, want %d (trailing empty slots kept)", len(res.Timeline), res.Elapsed, want)
			}
		})
	}
}
