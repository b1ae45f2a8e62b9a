package kafkaapi

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// logRecords keeps the records logged at Error.
type logRecords struct {
	mu      sync.Mutex // guards records
	records []slog.Record
}

func (l *logRecords) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelError }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// stacks returns the stack attribute of each record.
func (l *logRecords) stacks() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.records {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "stack" {
				out = append(out, a.Value.String())
			}
			return true
		})
	}
	return out
}

// A panic while starting a request (a Produce, on the connection's reader)
// or answering one (a Fetch, on its writer) closes that connection, is
// logged at Error with its stack, and is counted; other connections, open
// before and opened after, are served.
func TestRequestPanicClosesOnlyItsConnection(t *testing.T) {
	logs := &logRecords{}
	h := startServer(t, Config{Logger: slog.New(logs)})
	h.fb.addTopic("t", 1)
	h.fb.addTopic("boom", 1)
	h.fb.set(func(b *fakeBackend) { b.panicTopic = "boom" })
	bystander := h.dial()
	bystander.roundTrip(apiVersionsRequest(3))

	for i, send := range []func(c *client){
		func(c *client) { c.send(produceRequest(9, -1, "boom", map[int32][]byte{0: makeBatch(1, "x")})) },
		func(c *client) { c.send(fetchRequest(12, "boom", time.Millisecond, 1, 0)) },
	} {
		c := h.dial()
		send(c)
		c.requireClosed()
		if got := h.srv.Requests().Panics; got != uint64(i+1) {
			t.Fatalf("after %d panics the counter is %d", i+1, got)
		}
		if rp := produce(t, bystander, produceRequest(9, -1, "t", map[int32][]byte{0: makeBatch(1, "ok")})).Topics[0].Partitions[0]; rp.ErrorCode != 0 {
			t.Fatalf("bystander's produce: %+v", rp)
		}
		h.requireServing()
	}
	stacks := logs.stacks()
	if len(stacks) != 2 {
		t.Fatalf("%d error records with a stack, want 2", len(stacks))
	}
	for _, st := range stacks {
		if !strings.Contains(st, "fakeBackend).Partition") {
			t.Fatalf("logged stack does not show the panicking call:\n%s", st)
		}
	}
}
