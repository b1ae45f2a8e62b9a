package multiraft

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// A Host with SourceAddr dials its peers from that IP; without it, from
// the address the system chooses (127.0.0.1 towards a loopback peer).
func TestSessionsLeaveFromSourceAddr(t *testing.T) {
	for _, c := range []struct{ src, want string }{{"127.0.0.2", "127.0.0.2"}, {"", "127.0.0.1"}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h, err := Listen(Config{NodeID: 1, BindAddr: "127.0.0.1:0", SourceAddr: c.src})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(testCtx(t), time.Second)
		dialed := make(chan error, 1)
		go func() {
			_, err := h.Dial(ctx, ln.Addr().String(), "svc") // the listener never answers
			dialed <- err
		}()
		conn, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		got := conn.RemoteAddr().(*net.TCPAddr).IP.String()
		conn.Close()
		cancel()
		<-dialed
		h.Close()
		ln.Close()
		if got != c.want {
			t.Errorf("SourceAddr %q: the peer saw a session from %s, want %s", c.src, got, c.want)
		}
	}
	if _, err := Listen(Config{NodeID: 1, BindAddr: "127.0.0.1:0", SourceAddr: "127.0.0.1:5"}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("SourceAddr with a port: %v, want ErrInvalidConfig", err)
	}
}
