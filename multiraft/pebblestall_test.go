package multiraft

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// A stall counts when it begins, adds its time when it ends, and is
// logged with Pebble's reason; an end without a begin adds nothing.
func TestStallWatchCountsAndLogs(t *testing.T) {
	var buf bytes.Buffer
	w := &stallWatch{log: slog.New(slog.NewTextHandler(&buf, nil))}
	l := w.listener()
	l.WriteStallEnd()
	if got := w.stalls(); got != (WriteStalls{}) {
		t.Fatalf("an end without a begin counted: %+v", got)
	}
	l.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	if got := w.stalls(); got.Count != 1 || got.Time != 0 {
		t.Fatalf("during the stall: %+v, want 1 begun and no time yet", got)
	}
	time.Sleep(5 * time.Millisecond)
	l.WriteStallEnd()
	if got := w.stalls(); got.Count != 1 || got.Time < 5*time.Millisecond {
		t.Fatalf("after the stall: %+v, want 1 of at least 5ms", got)
	}
	if !strings.Contains(buf.String(), `reason="memtable count limit reached"`) {
		t.Fatalf("log lacks the reason:\n%s", buf.String())
	}
}

// The node-wide store reports its stalls through the Host, zero before
// it opens.
func TestHostReportsLogStoreStalls(t *testing.T) {
	h, err := Listen(Config{NodeID: 1, BindAddr: "127.0.0.1:0", LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got := h.LogStoreStalls(); got != (WriteStalls{}) {
		t.Fatalf("before the store opened: %+v", got)
	}
	pl, err := h.pebbleLog()
	if err != nil {
		t.Fatal(err)
	}
	pl.watch.begin(pebble.WriteStallBeginInfo{Reason: "test"})
	pl.watch.end()
	if got := h.LogStoreStalls(); got.Count != 1 {
		t.Fatalf("Host.LogStoreStalls = %+v, want the store's one stall", got)
	}
}
