package raftmux

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var channels = []string{"raft/g1", "rpc/meta"}

// Two muxes, two channels each: every dial, both ways, lands on the listener
// it named, and a 256 KiB payload survives the round trip.
func TestRoutesEachConnToItsChannel(t *testing.T) {
	muxes := []*Mux{newMux(t, Config{}), newMux(t, Config{})}
	for i, m := range muxes {
		for _, ch := range channels {
			serveEcho(t, mustListener(t, m, ch), ch+"@"+string(rune('A'+i)))
		}
	}
	data := payload(256 << 10)
	for from, m := range muxes {
		to := muxes[1-from]
		for _, ch := range channels {
			tag, err := echo(testCtx(t), m, to.Addr().String(), ch, data)
			if err != nil {
				t.Fatalf("echo %d->%d %s: %v", from, 1-from, ch, err)
			}
			if want := ch + "@" + string(rune('A'+1-from)); tag != want {
				t.Errorf("dial %s on mux %d reached %q, want %q", ch, 1-from, tag, want)
			}
		}
	}
	for i, m := range muxes {
		if st := m.Stats(); st.Routed != uint64(len(channels)) || st.BadHeader != 0 || st.UnknownChannel != 0 {
			t.Errorf("mux %d stats = %+v, want %d routed and no rejections", i, st, len(channels))
		}
	}
}

func TestUnknownChannelIsRejectedAndMuxKeepsServing(t *testing.T) {
	client, server := newMux(t, Config{}), newMux(t, Config{})
	serveEcho(t, mustListener(t, server, "rpc/meta"), "meta")

	_, err := client.Dial(testCtx(t), server.Addr().String(), "rpc/nobody")
	if !errors.Is(err, ErrUnknownChannel) {
		t.Fatalf("Dial unknown channel: err = %v, want ErrUnknownChannel", err)
	}
	var ce *ChannelError
	if !errors.As(err, &ce) || ce.Op != "dial" || ce.Channel != "rpc/nobody" || ce.Addr != server.Addr().String() {
		t.Errorf("Dial error = %#v, want a *ChannelError naming the dial", err)
	}
	if tag, err := echo(testCtx(t), client, server.Addr().String(), "rpc/meta", payload(100)); err != nil || tag != "meta" {
		t.Fatalf("echo after rejection: tag %q, err %v", tag, err)
	}
	if st := server.Stats(); st.UnknownChannel != 1 || st.Routed != 1 {
		t.Errorf("server stats = %+v, want 1 unknown channel and 1 routed", st)
	}
}

// Raw bytes that are not a valid header get the conn closed (after a status
// byte for a version mismatch), are counted, and do not disturb the mux.
func TestBadHeaderClosesConnAndMuxKeepsServing(t *testing.T) {
	m := newMux(t, Config{})
	serveEcho(t, mustListener(t, m, "rpc/meta"), "meta")
	cases := []struct {
		name      string
		send      []byte
		halfClose bool   // send EOF after the bytes
		reply     []byte // what the mux writes before closing
	}{
		{name: "http", send: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
		{name: "kafka request", send: []byte{0, 0, 0, 20, 0, 18, 0, 3}},
		{name: "newer version", send: []byte{headerMagic, 2, 0, 8, 'r', 'p', 'c', '/', 'm', 'e', 't', 'a'}, reply: []byte{statusUnsupportedVersion}},
		{name: "empty name", send: []byte{headerMagic, headerVersion, 0, 0}},
		{name: "name too long", send: []byte{headerMagic, headerVersion, 1, 0, 'x'}},
		{name: "space in name", send: []byte{headerMagic, headerVersion, 0, 3, 'a', ' ', 'b'}},
		{name: "truncated name", send: []byte{headerMagic, headerVersion, 0, 8, 'r', 'p', 'c'}, halfClose: true},
		{name: "truncated fixed part", send: []byte{headerMagic}, halfClose: true},
		{name: "nothing", halfClose: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", m.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			if tc.halfClose {
				_ = c.(*net.TCPConn).CloseWrite()
			}
			if got := readUntilClosed(t, c); string(got) != string(tc.reply) {
				t.Errorf("mux replied %v, want %v", got, tc.reply)
			}
		})
	}
	waitFor(t, "bad headers counted", func() bool { return m.Stats().BadHeader == uint64(len(cases)) })
	if tag, err := echo(testCtx(t), m, m.Addr().String(), "rpc/meta", payload(100)); err != nil || tag != "meta" {
		t.Fatalf("echo after bad headers: tag %q, err %v", tag, err)
	}
	if st := m.Stats(); st.Routed != 1 || st.UnknownChannel != 0 || st.BadHeader != uint64(len(cases)) {
		t.Errorf("stats = %+v", st)
	}
}

func TestSilentClient(t *testing.T) {
	silent := func(t *testing.T, m *Mux, send []byte) net.Conn {
		c, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.Write(send); err != nil {
			t.Fatal(err)
		}
		return c
	}

	// With a header timeout far beyond the dial's own 10s bound, the dial
	// only succeeds if silent conns are read off the accept path.
	t.Run("does not block other accepts", func(t *testing.T) {
		m := newMux(t, Config{HeaderTimeout: time.Hour})
		serveEcho(t, mustListener(t, m, "rpc/meta"), "meta")
		silent(t, m, nil)
		silent(t, m, []byte{headerMagic, headerVersion}) // half a header
		if tag, err := echo(testCtx(t), m, m.Addr().String(), "rpc/meta", payload(100)); err != nil || tag != "meta" {
			t.Fatalf("echo past silent clients: tag %q, err %v", tag, err)
		}
		if st := m.Stats(); st.Open != 2 || st.BadHeader != 0 {
			t.Errorf("stats = %+v, want the 2 silent conns still open", st)
		}
		// Mux.Close at the end of the test must close them and end their goroutines.
	})

	t.Run("is closed after HeaderTimeout", func(t *testing.T) {
		m := newMux(t, Config{HeaderTimeout: 100 * time.Millisecond})
		c := silent(t, m, []byte{headerMagic})
		if got := readUntilClosed(t, c); len(got) != 0 {
			t.Errorf("mux wrote %v to a silent conn", got)
		}
		waitFor(t, "timeout counted", func() bool { return m.Stats().BadHeader == 1 })
		waitFor(t, "conn forgotten", func() bool { return m.Stats().Open == 0 })
	})
}

func TestClosingOneListenerLeavesOthersWorking(t *testing.T) {
	m := newMux(t, Config{})
	la, lb := mustListener(t, m, "svc/a"), mustListener(t, m, "svc/b")
	waitA := serveEcho(t, la, "a")
	serveEcho(t, lb, "b")
	addr := m.Addr().String()

	if _, err := m.Listener("svc/b"); !errors.Is(err, ErrChannelExists) {
		t.Fatalf("second Listener(svc/b): err = %v, want ErrChannelExists", err)
	}
	if err := la.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := waitA(); !errors.Is(err, ErrClosed) || !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: err = %v, want ErrClosed and net.ErrClosed", err)
	}
	if _, err := m.Dial(testCtx(t), addr, "svc/a"); !errors.Is(err, ErrUnknownChannel) {
		t.Errorf("Dial closed channel: err = %v, want ErrUnknownChannel", err)
	}
	if tag, err := echo(testCtx(t), m, addr, "svc/b", payload(1000)); err != nil || tag != "b" {
		t.Fatalf("echo svc/b: tag %q, err %v", tag, err)
	}

	// The name is free again.
	serveEcho(t, mustListener(t, m, "svc/a"), "a2")
	if tag, err := echo(testCtx(t), m, addr, "svc/a", payload(1000)); err != nil || tag != "a2" {
		t.Fatalf("echo re-registered svc/a: tag %q, err %v", tag, err)
	}
}

func TestMuxCloseUnblocksAcceptAndClosesConns(t *testing.T) {
	m, err := Listen(Config{BindAddr: "127.0.0.1:0", HeaderTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Listener("rpc/meta")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	acceptErr := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			acceptErr <- err
			return
		}
		accepted <- c
		_, err = l.Accept() // blocks until Close
		acceptErr <- err
	}()

	dialed, err := m.Dial(testCtx(t), m.Addr().String(), "rpc/meta")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dialed.Close() }()
	serverSide := <-accepted
	silent, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = silent.Close() }()
	waitFor(t, "both conns accepted", func() bool { return m.Stats().Open == 2 })

	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-acceptErr; !errors.Is(err, ErrClosed) || !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Mux.Close: err = %v, want ErrClosed and net.ErrClosed", err)
	}
	if _, err := serverSide.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read on the accepted conn after Mux.Close: err = %v, want net.ErrClosed", err)
	}
	readUntilClosed(t, dialed)
	readUntilClosed(t, silent)
	if st := m.Stats(); st.Open != 0 {
		t.Errorf("open conns after Close = %d", st.Open)
	}
	if _, err := m.Listener("rpc/other"); !errors.Is(err, ErrClosed) {
		t.Errorf("Listener after Close: err = %v, want ErrClosed", err)
	}
	if _, err := m.Dial(testCtx(t), "127.0.0.1:1", "rpc/meta"); !errors.Is(err, ErrClosed) {
		t.Errorf("Dial after Close: err = %v, want ErrClosed", err)
	}
	if _, err := net.Dial("tcp", m.ListenAddr().String()); err == nil {
		t.Errorf("port still accepting after Close")
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	goleak.VerifyNone(t)
}

func TestDialHonoursContext(t *testing.T) {
	// A server that accepts and never answers the header.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		close(held)
		for c := range held {
			_ = c.Close()
		}
	})
	m := newMux(t, Config{})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := m.Dial(ctx, ln.Addr().String(), "rpc/meta"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial to a mute server: err = %v, want context.DeadlineExceeded", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := m.Dial(ctx, ln.Addr().String(), "rpc/meta"); !errors.Is(err, context.Canceled) {
		t.Errorf("Dial with a canceled context: err = %v, want context.Canceled", err)
	}
}

func TestChannelNamesAreValidated(t *testing.T) {
	m := newMux(t, Config{})
	for _, name := range []string{"", strings.Repeat("x", MaxChannelNameLen+1), "a b", "tab\t", "nl\n", "caf\u00e9", "del\x7f"} {
		if _, err := m.Listener(name); !errors.Is(err, ErrInvalidChannel) {
			t.Errorf("Listener(%q): err = %v, want ErrInvalidChannel", name, err)
		}
		if _, err := m.Dial(testCtx(t), m.Addr().String(), name); !errors.Is(err, ErrInvalidChannel) {
			t.Errorf("Dial(%q): err = %v, want ErrInvalidChannel", name, err)
		}
	}
	for _, name := range []string{"raft/p-events-0", "rpc/meta", strings.Repeat("~", MaxChannelNameLen)} {
		serveEcho(t, mustListener(t, m, name), "ok")
		if _, err := echo(testCtx(t), m, m.Addr().String(), name, payload(10)); err != nil {
			t.Errorf("echo on %q: %v", name, err)
		}
	}
}

func TestListenValidatesConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{BindAddr: "127.0.0.1:0", AdvertiseAddr: "nohost"},
		{BindAddr: "127.0.0.1:0", AdvertiseAddr: ":9093"},
		{BindAddr: "127.0.0.1:0", AdvertiseAddr: "node1:0"},
		{BindAddr: "127.0.0.1:0", AdvertiseAddr: "node1:70000"},
		{BindAddr: "127.0.0.1:0", HeaderTimeout: -time.Second},
		{BindAddr: "127.0.0.1:0", HeartbeatWindow: -time.Millisecond},
		{BindAddr: "127.0.0.1:0", HeartbeatHandlerTimeout: -time.Second},
		{BindAddr: "127.0.0.1:0", HeartbeatHandlerTimeout: time.Microsecond},
	} {
		if m, err := Listen(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Listen(%+v): err = %v, want ErrInvalidConfig", cfg, err)
			if err == nil {
				_ = m.Close()
			}
		}
	}
}

func TestAdvertisedAddress(t *testing.T) {
	m := newMux(t, Config{BindAddr: "127.0.0.1:0", AdvertiseAddr: "node1.example:9093"})
	if got := m.Addr().String(); got != "node1.example:9093" {
		t.Errorf("Addr = %q, want the advertised address", got)
	}
	if got := m.ListenAddr().String(); !strings.HasPrefix(got, "127.0.0.1:") || strings.HasSuffix(got, ":0") {
		t.Errorf("ListenAddr = %q, want 127.0.0.1 with the bound port", got)
	}
	l := mustListener(t, m, "rpc/meta")
	if l.Addr().String() != "node1.example:9093" {
		t.Errorf("listener Addr = %q", l.Addr())
	}

	wild := newMux(t, Config{BindAddr: "0.0.0.0:0"})
	if _, err := wild.Transport("g", TransportConfig{}); !errors.Is(err, ErrNotAdvertisable) {
		t.Errorf("Transport on 0.0.0.0 without AdvertiseAddr: err = %v, want ErrNotAdvertisable", err)
	}
	tr, err := newMux(t, Config{BindAddr: "0.0.0.0:0", AdvertiseAddr: "127.0.0.1:9093"}).Transport("g", TransportConfig{})
	if err != nil {
		t.Fatalf("Transport with AdvertiseAddr: %v", err)
	}
	defer func() { _ = tr.Close() }()
	if tr.LocalAddr() != "127.0.0.1:9093" {
		t.Errorf("transport LocalAddr = %q, want the advertised address", tr.LocalAddr())
	}
}
