package membership

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/logging"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testMeta is node id's metadata with fake but valid addresses.
func testMeta(id int32) NodeMeta {
	return NodeMeta{
		ID:        id,
		KafkaAddr: fmt.Sprintf("kafka-%d.test:9092", id),
		RaftAddr:  fmt.Sprintf("10.0.0.%d:9093", id),
	}
}

// fastConfig gossips on 127.0.0.1 with a free port and timings that detect a
// failure in well under a second.
func fastConfig(id int32) Config {
	return Config{
		Meta:           testMeta(id),
		BindAddr:       "127.0.0.1:0",
		Logger:         logging.Discard(),
		ProbeInterval:  100 * time.Millisecond,
		ProbeTimeout:   50 * time.Millisecond,
		GossipInterval: 20 * time.Millisecond,
		SuspicionMult:  2,
		TCPTimeout:     time.Second,
		JoinBackoff:    20 * time.Millisecond,
		JoinMaxBackoff: 100 * time.Millisecond,
	}
}

// start runs New and shuts the node down when the test ends.
func start(t *testing.T, cfg Config) *Membership {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New(node %d): %v", cfg.Meta.ID, err)
	}
	t.Cleanup(func() {
		if err := m.Shutdown(); err != nil {
			t.Errorf("Shutdown(node %d): %v", cfg.Meta.ID, err)
		}
	})
	return m
}

// waitFor polls cond until it returns "" or the deadline passes, then fails
// with cond's last complaint.
func waitFor(t *testing.T, within time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %s", within, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// recorder is an OnEvent callback that keeps every event with the
// goroutine that delivered it, and notes overlapping calls.
type recorder struct {
	mu         sync.Mutex
	events     []Event
	goroutines []uint64
	active     int
	overlaps   int // calls that started while another was running
	hook       func(Event)
}

func (r *recorder) onEvent(e Event) {
	r.mu.Lock()
	r.active++
	if r.active > 1 {
		r.overlaps++
	}
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(e)
	}
	time.Sleep(time.Millisecond) // widen the window for an overlap
	r.mu.Lock()
	r.events = append(r.events, e)
	r.goroutines = append(r.goroutines, goroutineID())
	r.active--
	r.mu.Unlock()
}

func (r *recorder) snapshot() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// kindsFor lists the kinds of the events about node id, in order.
func (r *recorder) kindsFor(id int32) []EventKind {
	var out []EventKind
	for _, e := range r.snapshot() {
		if e.Node.ID == id {
			out = append(out, e.Kind)
		}
	}
	return out
}

// goroutineID parses "goroutine N [" from the current stack (test only).
func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	buf = buf[:bytes.IndexByte(buf, ' ')]
	id, err := strconv.ParseUint(string(buf), 10, 64)
	if err != nil {
		panic("cannot parse goroutine id: " + err.Error())
	}
	return id
}
