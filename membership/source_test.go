package membership

import (
	"errors"
	"net"
	"testing"
	"time"
)

// A node with SourceIP opens its gossip TCP streams (a join's push/pull)
// from that IP, and still forms a cluster with a node without it.
func TestSourceIPForStreams(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := fastConfig(1)
	cfg.BindAddr, cfg.SourceIP = "127.0.0.2:0", "127.0.0.2"
	a := start(t, cfg)
	joined := make(chan struct{})
	go func() {
		defer close(joined)
		a.Join(ctxFor(t, 500*time.Millisecond), []string{ln.Addr().String()}) // a fake seed: fails
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if got := conn.RemoteAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.2" {
		t.Errorf("join stream from %s, want 127.0.0.2", got)
	}
	conn.Close()
	<-joined

	b := start(t, fastConfig(2))
	if n, err := a.Join(ctxFor(t, 10*time.Second), []string{b.LocalAddr()}); err != nil || n != 1 {
		t.Fatalf("Join = %d, %v; want 1, nil", n, err)
	}
	sees(t, b, 5*time.Second, wantMembers(1, 2))
	sees(t, a, 5*time.Second, wantMembers(1, 2))

	bad := fastConfig(3)
	bad.SourceIP = "nope"
	if _, err := New(bad); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("SourceIP %q: %v, want ErrInvalidConfig", bad.SourceIP, err)
	}
}
