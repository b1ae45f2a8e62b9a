package raftmux

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/goleak"
)

// Transports of two groups on the same pair of muxes answer for their own
// group only, and closing one leaves the other working: over RPCChannel
// (a closed group is ErrUnknownGroup) and, with coalescing disabled, over
// each group's own channel (ErrUnknownChannel).
func TestTransportCloseUnregistersOnlyItsGroup(t *testing.T) {
	for _, c := range []struct {
		name    string
		off     bool
		refused error
	}{{"rpc channel", false, ErrUnknownGroup}, {"group channels", true, ErrUnknownChannel}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{DisableHeartbeatCoalescing: c.off}
			testCloseUnregisters(t, newMux(t, cfg), newMux(t, cfg), c.refused)
		})
	}
}

func testCloseUnregisters(t *testing.T, a, b *Mux, refused error) {
	a1, a2 := newTransport(t, a, "g1"), newTransport(t, a, "g2")
	b1, b2 := newTransport(t, b, "g1"), newTransport(t, b, "g2")
	if _, err := b.Transport("g1", TransportConfig{}); !errors.Is(err, ErrChannelExists) {
		t.Fatalf("second Transport(g1): err = %v, want ErrChannelExists", err)
	}
	answerVotes(t, b1, 1)
	answerVotes(t, b2, 2)
	for _, c := range []struct {
		from *GroupTransport
		want uint64
	}{{a1, 1}, {a2, 2}} {
		if term, err := vote(c.from, b.Addr()); err != nil || term != c.want {
			t.Fatalf("vote to group %d: term %d, err %v", c.want, term, err)
		}
	}

	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	// a1's pooled conn was closed by b1's Close, so the first vote may fail
	// on it; the next one must be refused by b's mux.
	waitFor(t, "group g1 refused", func() bool {
		_, err := vote(a1, b.Addr())
		return errors.Is(err, refused)
	})
	if term, err := vote(a2, b.Addr()); err != nil || term != 2 {
		t.Fatalf("vote to g2 after closing g1: term %d, err %v", term, err)
	}
	// The group may come back on the same mux.
	answerVotes(t, newTransport(t, b, "g1"), 11)
	waitFor(t, "group g1 back", func() bool {
		term, err := vote(a1, b.Addr())
		return err == nil && term == 11
	})
}

func newTransport(t *testing.T, m *Mux, group string) *GroupTransport {
	t.Helper()
	tr, err := m.Transport(group, TransportConfig{Timeout: time.Second})
	if err != nil {
		t.Fatalf("Transport(%q): %v", group, err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// answerVotes answers every RequestVote reaching tr with term until stop is
// called or the test ends.
func answerVotes(t *testing.T, tr raft.Transport, term uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case rpc := <-tr.Consumer():
				rpc.Respond(&raft.RequestVoteResponse{Term: term}, nil)
			case <-done: // raft never closes Consumer
				return
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// vote sends a RequestVote from tr to addr and returns the responder's term.
func vote(tr raft.Transport, addr net.Addr) (uint64, error) {
	var resp raft.RequestVoteResponse
	err := tr.RequestVote("peer", raft.ServerAddress(addr.String()), &raft.RequestVoteRequest{Term: 1}, &resp)
	return resp.Term, err
}

// recorder keeps every log record at Error or above.
type recorder struct {
	mu   sync.Mutex // guards msgs
	msgs []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	if rec.Level >= slog.LevelError {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.msgs = append(r.msgs, rec.Message)
	}
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// Closing a mux under live transports, then the transports, logs no error
// with the default transport logger: closed conns read as EOF, and Accept
// waits for the transport's Close instead of failing in a loop.
func TestShutdownIsQuiet(t *testing.T) {
	rec := &recorder{}
	a, err := Listen(Config{BindAddr: "127.0.0.1:0", Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Listen(Config{BindAddr: "127.0.0.1:0", Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	ta, err := a.Transport("g", TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.Transport("g", TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	stopA, stopB := answerVotes(t, ta, 1), answerVotes(t, tb, 2)
	if term, err := vote(ta, b.Addr()); err != nil || term != 2 {
		t.Fatalf("vote a->b: term %d, err %v", term, err)
	}
	if term, err := vote(tb, a.Addr()); err != nil || term != 1 {
		t.Fatalf("vote b->a: term %d, err %v", term, err)
	}

	if err := b.Close(); err != nil { // wrong order, on purpose
		t.Fatal(err)
	}
	// Give a misbehaving Accept or conn handler time to log. No assertion
	// depends on this being long enough; a correct package passes anyway.
	time.Sleep(100 * time.Millisecond)
	stopA()
	stopB()
	for _, c := range []interface{ Close() error }{tb, ta, a} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	goleak.VerifyNone(t) // every handler has finished logging
	if errs := rec.errors(); len(errs) != 0 {
		t.Errorf("error logs during shutdown: %q", errs)
	}
}
