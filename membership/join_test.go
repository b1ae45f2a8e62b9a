package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// freeAddr returns a 127.0.0.1 address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestJoinUnreachableSeedEndsWithContext(t *testing.T) {
	m := start(t, fastConfig(1))
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	seed := freeAddr(t)
	n, err := m.Join(ctx, []string{seed, m.LocalAddr()})
	if n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Join = %d, %v; want 0 and a deadline error", n, err)
	}
	var je *JoinError
	if !errors.As(err, &je) {
		t.Fatalf("err %T is not a *JoinError", err)
	}
	if je.Attempts < 2 || je.Last == nil {
		t.Errorf("JoinError %+v: want several attempts and the last failure", je)
	}
	if !strings.Contains(je.Last.Error(), seed) {
		t.Errorf("last failure %q does not name the seed %s", je.Last, seed)
	}
	if got := m.Members(); len(got) != 1 {
		t.Errorf("Members after failed join: %+v", got)
	}
}

// Join returns at once, without error, when there is no one else to meet:
// if it waited for an answer the short context would end it with an error.
func TestJoinNothingButSelf(t *testing.T) {
	m := start(t, fastConfig(1))
	for _, seeds := range [][]string{nil, {}, {m.LocalAddr()}, {m.LocalAddr(), m.LocalAddr()}} {
		n, err := m.Join(ctxFor(t, 200*time.Millisecond), seeds)
		if n != 0 || err != nil {
			t.Errorf("Join(%v) = %d, %v; want 0, nil", seeds, n, err)
		}
	}
}

// Bound to all interfaces, any local address with our port is us.
func TestJoinSkipsSelfWhenBoundToAllInterfaces(t *testing.T) {
	cfg := fastConfig(1)
	cfg.BindAddr = "0.0.0.0:0"
	cfg.AdvertiseAddr = "127.0.0.1"
	m := start(t, cfg)
	_, port, err := net.SplitHostPort(m.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	if m.LocalAddr() != "127.0.0.1:"+port {
		t.Errorf("LocalAddr %q, want the advertised ip with the bound port", m.LocalAddr())
	}
	for _, seed := range []string{"127.0.0.1:" + port, "localhost:" + port, "127.0.0.2:" + port} {
		n, err := m.Join(ctxFor(t, 200*time.Millisecond), []string{seed})
		if n != 0 || err != nil {
			t.Errorf("Join(%s) = %d, %v; want 0, nil", seed, n, err)
		}
	}
}

// Self in the seed list does not count as an answer; the other seed does.
func TestJoinCountsOnlyOthers(t *testing.T) {
	n1 := start(t, fastConfig(1))
	n2 := start(t, fastConfig(2))
	n, err := n2.Join(ctxFor(t, 5*time.Second), []string{n2.LocalAddr(), n1.LocalAddr()})
	if n != 1 || err != nil {
		t.Fatalf("Join = %d, %v; want 1, nil", n, err)
	}
	sees(t, n1, 5*time.Second, wantMembers(1, 2))
}

// A seed that starts late is reached by a later round.
func TestJoinRetriesUntilSeedAppears(t *testing.T) {
	cfg1 := fastConfig(1)
	cfg1.BindAddr = freeAddr(t)
	logs := &countingHandler{msg: "join round failed; retrying"}
	cfg2 := fastConfig(2)
	cfg2.Logger = slog.New(logs)
	n2 := start(t, cfg2)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := n2.Join(ctxFor(t, 10*time.Second), []string{cfg1.BindAddr})
		done <- result{n, err}
	}()
	waitFor(t, 5*time.Second, func() string {
		if c := logs.count.Load(); c < 2 {
			return fmt.Sprintf("%d failed join rounds so far", c)
		}
		return ""
	})
	n1 := start(t, cfg1)
	r := <-done
	if r.n != 1 || r.err != nil {
		t.Fatalf("Join = %d, %v; want 1, nil", r.n, r.err)
	}
	sees(t, n1, 5*time.Second, wantMembers(1, 2))
}

// countingHandler counts log records with one message, at any level.
type countingHandler struct {
	msg   string
	count atomic.Int32
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.count.Add(1)
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func TestJoinDuplicateID(t *testing.T) {
	n1 := start(t, fastConfig(1))
	n2 := start(t, fastConfig(2))
	if _, err := n2.Join(ctxFor(t, 5*time.Second), []string{n1.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	dupCfg := fastConfig(1)
	dupCfg.Meta.KafkaAddr = "impostor.test:9092"
	dup := start(t, dupCfg)

	n, err := dup.Join(ctxFor(t, 5*time.Second), []string{n2.LocalAddr()})
	var de *DuplicateIDError
	if n != 0 || !errors.Is(err, ErrDuplicateID) || !errors.As(err, &de) {
		t.Fatalf("Join = %d, %v; want a *DuplicateIDError", n, err)
	}
	if de.ID != 1 || de.Known != dup.LocalAddr() || de.Claimed != n1.LocalAddr() {
		t.Errorf("DuplicateIDError %+v: want id 1 known at %s, claimed at %s", de, dup.LocalAddr(), n1.LocalAddr())
	}
	// The cluster still maps id 1 to the original node.
	for _, m := range []*Membership{n1, n2} {
		if got, _ := m.Lookup(1); got != testMeta(1) {
			t.Errorf("node %d maps id 1 to %+v", m.Local().ID, got)
		}
	}
	if got := dup.Members(); len(got) != 1 || got[0] != dupCfg.Meta {
		t.Errorf("impostor's view %+v, want only itself", got)
	}
}

func TestJoinRejectsBadSeed(t *testing.T) {
	m := start(t, fastConfig(1))
	n, err := m.Join(ctxFor(t, 100*time.Millisecond), []string{"127.0.0.1:0"})
	var je *JoinError
	if n != 0 || !errors.As(err, &je) || je.Last == nil || !strings.Contains(je.Last.Error(), "bad seed") {
		t.Errorf("Join(port 0) = %d, %v; want a JoinError naming the bad seed", n, err)
	}
}

func TestSplitSeed(t *testing.T) {
	for seed, want := range map[string]struct {
		host string
		port uint16
		ok   bool
	}{
		"10.0.0.1:7000": {"10.0.0.1", 7000, true},
		"node1":         {"node1", DefaultPort, true},
		"[::1]:7000":    {"::1", 7000, true},
		"::1":           {"::1", DefaultPort, true},
		"node1:":        {"", 0, false},
		":7000":         {"", 0, false},
		"node1:x":       {"", 0, false},
	} {
		host, port, err := splitSeed(seed)
		if (err == nil) != want.ok || host != want.host || port != want.port {
			t.Errorf("splitSeed(%q) = %q, %d, %v; want %q, %d, ok=%v", seed, host, port, err, want.host, want.port, want.ok)
		}
	}
}
