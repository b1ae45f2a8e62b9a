package diskguard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeDisk is a filesystem whose free space the test sets.
type fakeDisk struct {
	mu          sync.Mutex
	total, free int64
	err         error
}

func (d *fakeDisk) stat(string) (Usage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Usage{Total: d.total, Free: d.free}, d.err
}

func (d *fakeDisk) set(free int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.free = free
}

func (d *fakeDisk) use(n int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.free -= n
}

func TestReserve(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		total int64
		want  int64
	}{
		{Config{MinFreePercent: 5}, 1 << 30, 1 << 30 / 20},
		{Config{MinFreePercent: 5, Floor: 4 << 20}, 32 << 20, 4 << 20},                       // the floor wins on a small disk
		{Config{MinFreePercent: 5}, 1 << 40, DefaultMaxReserve},                              // capped on a large one
		{Config{MinFreeBytes: 100 << 20, MinFreePercent: 5}, 1 << 40, 100 << 20},             // bytes, when set, win
		{Config{MinFreeBytes: 1 << 20, MinFreePercent: 5, Floor: 2 << 20}, 1 << 40, 2 << 20}, // but not below the floor
	} {
		if got := Reserve(c.cfg, c.total); got != c.want {
			t.Errorf("Reserve(%+v, %d) = %d, want %d", c.cfg, c.total, got, c.want)
		}
	}
}

// Produce fills a disk until Admit refuses, with KAFKA_STORAGE_ERROR; the
// data written stops above the reserve; once space is freed, Admit lets
// writes in again without anyone calling anything else.
func TestAdmitStopsAtTheReserveAndResumes(t *testing.T) {
	d := &fakeDisk{total: 32 << 20, free: 20 << 20}
	g, err := New(Config{Dir: "/data", MinFreePercent: 10, Stat: d.stat})
	if err != nil {
		t.Fatal(err)
	}
	reserve := g.State().Reserve
	if reserve != 32<<20/10 {
		t.Fatalf("reserve %d, want 10%% of 32 MiB", reserve)
	}
	const write = 16 << 10
	var refused error
	for i := 0; i < 10_000 && refused == nil; i++ {
		if refused = g.Admit(write); refused == nil {
			d.use(2 * write) // the partition log and the Raft log
			if i%8 == 0 {
				time.Sleep(time.Millisecond) // some Admits after a stale look
			}
		}
	}
	if !errors.Is(refused, ErrBelowReserve) || !errors.Is(refused, kerr.KafkaStorageError) {
		t.Fatalf("filling the disk ended with %v, want ErrBelowReserve and KAFKA_STORAGE_ERROR", refused)
	}
	if free := g.State().Free; free < reserve-2*write {
		t.Fatalf("writes went on to %d bytes free, below the reserve %d", free, reserve)
	}
	if !g.Refusing() {
		t.Fatal("Refusing is false after a refusal")
	}
	d.set(reserve + 4<<20) // DeleteRecords freed space
	deadline := time.Now().Add(5 * time.Second)
	for g.Admit(write) != nil {
		if time.Now().After(deadline) {
			t.Fatal("Admit still refuses after space was freed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Run reports each change of the disk's state to OnChange: low, then
// refusing, then back to normal.
func TestRunReportsChanges(t *testing.T) {
	d := &fakeDisk{total: 100 << 20, free: 50 << 20}
	changes := make(chan State, 8)
	g, err := New(Config{Dir: "/data", MinFreePercent: 5, AlertFreePercent: 10, Stat: d.stat,
		Interval: 5 * time.Millisecond, OnChange: func(s State) { changes <- s }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	defer func() { cancel(); <-done }()
	next := func(low, refusing bool) {
		t.Helper()
		select {
		case s := <-changes:
			if s.Low != low || s.Refusing != refusing {
				t.Fatalf("change to low=%v refusing=%v, want low=%v refusing=%v", s.Low, s.Refusing, low, refusing)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no change reported, want low=%v refusing=%v", low, refusing)
		}
	}
	d.set(8 << 20)
	next(true, false)
	d.set(4 << 20)
	next(true, true)
	d.set(60 << 20)
	next(false, false)
}

// A disk that cannot be looked at fails New, naming it.
func TestNewFailsOnAnUnreadableDisk(t *testing.T) {
	d := &fakeDisk{err: errors.New("no such directory")}
	if _, err := New(Config{Dir: "/nowhere", Stat: d.stat}); err == nil {
		t.Fatal("New succeeded on a disk it cannot read")
	}
}
