package reqfuzz

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestChecksCatchChanges checks that the round checks can fail: they pass
// on a fresh node, then fail when a node's peak memory is over the bound
// (and pass once recoverNodes replaced it),
// when its log mentions a panic, when the node's process is gone (and pass again once RestartExited
// brought it back with its data), when a duplicate is answered with
// another offset than the first one, and when the reference topic holds
// one record more.
func TestChecksCatchChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h := startHarness(ctx, t, 1, Config{RSSBound: 1 << 40})
	r := h.runner
	must(t, r.Check(ctx))

	r.cfg.RSSBound = 1 << 20
	err := r.Check(ctx)
	var me *MemoryError
	if !errors.As(err, &me) || me.Node != 1 {
		t.Errorf("with a bound of 1 MiB: %v, want a MemoryError of node 1", err)
	}
	r.cfg.RSSBound = 1 << 40
	pid, _ := h.c.Pid(1)
	if !recoverNodes(ctx, t, r, err) {
		t.Fatal("the node over the memory bound was not replaced")
	}
	if now, _ := h.c.Pid(1); now == pid {
		t.Errorf("the node over the memory bound still runs as pid %d", pid)
	}

	f, err := os.OpenFile(h.c.Node(1).LogFile, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString("time=now level=ERROR msg=\"kafkaapi: panic serving a request; closing its connection\" panic=injected\n")
	must(t, errors.Join(err, f.Close()))
	var pe *PanicError
	if err := r.Check(ctx); !errors.As(err, &pe) || pe.Node != 1 {
		t.Errorf("with a panic in the node's log: %v, want a PanicError of node 1", err)
	}
	must(t, r.Check(ctx)) // a panic is reported once

	must(t, h.c.Kill(1))
	if err := r.Check(ctx); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("with the node killed: %v, want node 1 is not running", err)
	}
	must(t, r.RestartExited(ctx))
	must(t, r.Check(ctx))
	pid, _ = h.c.Pid(1)
	must(t, r.CrashRestart(ctx, 0))
	if now, _ := h.c.Pid(1); now == pid {
		t.Errorf("CrashRestart left the node running as pid %d", pid)
	}

	r.ref.dupOffset++
	if err := r.ref.CheckDuplicate(ctx); err == nil {
		t.Error("a duplicate answered with its first offset passed a check expecting the next one")
	}
	r.ref.dupOffset--
	must(t, r.ref.CheckDuplicate(ctx))

	cl, err := kgo.NewClient(kgo.SeedBrokers(h.c.Seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	must(t, err)
	defer cl.Close()
	must(t, cl.ProduceSync(ctx, &kgo.Record{Topic: RefTopic, Partition: 1, Value: []byte("extra")}).FirstErr())
	if err := r.ref.CheckData(ctx); err == nil || !strings.Contains(err.Error(), "partition 1") {
		t.Errorf("with a record added to partition 1: %v, want an error naming partition 1", err)
	}
}

// CrashRestart reports a node that does not start again.
func TestCrashRestartReportsAFailedStart(t *testing.T) {
	refused := errors.New("exited while starting")
	r := &Runner{cfg: Config{Logf: t.Logf, Targets: []Target{{ID: 2, Kill: func() error { return nil },
		Restart: func(context.Context) error { return refused }}}}}
	if err := r.CrashRestart(context.Background(), 3); !errors.Is(err, refused) {
		t.Fatalf("CrashRestart: %v, want the start's error", err)
	}
}
