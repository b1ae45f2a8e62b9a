package multiraft

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"

	"github.com/minikafka/minikafka-go/internal/frame"
)

func TestServiceStreams(t *testing.T) {
	n := newTestNet(t, nil)
	a, b := n.start(1), n.start(2)
	l, err := b.Listen("echo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Listen("echo"); !errors.Is(err, ErrServiceExists) {
		t.Fatalf("second Listen: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("Accept: %v", err)
				}
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	ctx := testCtx(t)
	c, err := a.Dial(ctx, b.Addr(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	msg := strings.Repeat("x", 3<<20) // more than a stream window
	go c.Write([]byte(msg))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		t.Fatalf("echo: %v", err)
	}
	c.Close()
	if _, err := a.Dial(ctx, b.Addr(), "nobody"); !errors.Is(err, ErrUnknownService) {
		t.Fatalf("Dial of an unknown service: %v", err)
	}
	if _, err := a.Dial(ctx, b.Addr(), "bad name"); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Dial with a bad name: %v", err)
	}
	l.Close()
	<-done
	a.Close()
	if _, err := a.Dial(ctx, b.Addr(), "echo"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Dial on a closed Host: %v", err)
	}
}

// TestServiceConnCloseEndsABlockedRead: closing a service stream, accepted
// or dialed, ends a Read blocked in it, as net.Conn promises, while the
// peer stays silent. A yamux stream's own Close did not: the metadata
// controller's Close waited for a silent peer's stream until its 30 s
// deadline.
func TestServiceConnCloseEndsABlockedRead(t *testing.T) {
	n := newTestNet(t, nil)
	a, b := n.start(1), n.start(2)
	l, err := b.Listen("silent")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dialed, err := a.Dial(testCtx(t), b.Addr(), "silent")
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	accepted, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	for _, c := range []struct {
		side string
		conn net.Conn
	}{{"accepted", accepted}, {"dialed", dialed}} {
		read := make(chan error, 1)
		go func() {
			var buf [1]byte
			_, err := c.conn.Read(buf[:])
			read <- err
		}()
		time.Sleep(50 * time.Millisecond) // let it block
		c.conn.Close()
		select {
		case err := <-read:
			if err == nil {
				t.Errorf("%s: Read after Close returned no error", c.side)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: a Read blocked in the stream was still blocked 5s after Close", c.side)
		}
	}
}

// Garbage on the port closes that connection only; the Host goes on.
func TestBadHandshakesAndFrames(t *testing.T) {
	n := newTestNet(t, func(tu *Tuning) { tu.HandshakeTimeout = 200 * time.Millisecond })
	a, b := n.start(1), n.start(2)
	for _, hello := range []string{"GET / HTTP/1.1\r\n\r\n", "MKRP\x09", ""} {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(hello))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		reply, err := io.ReadAll(c)
		c.Close()
		if isTimeout(err) || (len(reply) > 0 && reply[0] == handshakeOK) {
			t.Fatalf("handshake %q: answered %x, %v", hello, reply, err)
		}
	}
	if got := b.Stats().BadHandshakes; got != 3 {
		t.Fatalf("BadHandshakes = %d, want 3", got)
	}

	// A call stream whose frame claims more than MaxFrame is closed before
	// anything is allocated; the session and the Host go on.
	p, _ := a.peer(b.Addr())
	st, _, err := p.callStream(time.Now().Add(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	bad := appendOpen(nil, streamCalls, "")
	bad = binary.BigEndian.AppendUint32(bad, 1<<31)
	st.Write(bad)
	st.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := frame.Read(st, 1, 1<<20); !isEOF(err) {
		t.Fatalf("oversized frame: stream read %v, want it closed", err)
	}
	// A frame with a forged heartbeat count, and an unknown call kind.
	for _, body := range [][]byte{
		{callHeartbeats, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		{99, 1, 'g'},
	} {
		st, _, err := p.callStream(time.Now().Add(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		st.Write(frame.Append(appendOpen(nil, streamCalls, ""), body))
		st.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := frame.Read(st, 1, 1<<20); !isEOF(err) {
			t.Fatalf("bad call %x: stream read %v, want it closed", body, err)
		}
	}
	// An RPC for a group that is not open is refused with a status.
	tr := bareTransport(t, a, "ghost")
	var resp raft.RequestVoteResponse
	if err := tr.RequestVote("2", raft.ServerAddress(b.Addr()), &raft.RequestVoteRequest{Term: 1}, &resp); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("vote for a group not open on the peer: %v", err)
	}
	if a.Stats().SessionsDialed != 1 {
		t.Fatalf("sessions dialed: %d, want the one session throughout", a.Stats().SessionsDialed)
	}
}

// An RPC for a group about to open waits for it (Tuning.OpenGrace); with
// no grace it is refused.
func TestRPCWaitsForAGroupAboutToOpen(t *testing.T) {
	for _, c := range []struct {
		grace time.Duration
		want  error
	}{{time.Second, nil}, {time.Nanosecond, ErrUnknownGroup}} {
		n := newTestNet(t, func(tu *Tuning) { tu.OpenGrace = c.grace })
		a, b := n.start(1), n.start(2)
		from := bareTransport(t, a, "late")
		served := make(chan struct{})
		go func() {
			defer close(served)
			time.Sleep(200 * time.Millisecond)
			tr, err := b.newTransport(&Group{spec: GroupSpec{Name: "late"}})
			if err != nil {
				t.Errorf("newTransport: %v", err)
				return
			}
			defer tr.Close()
			select {
			case rpc := <-tr.consumer:
				rpc.Respond(&raft.RequestVoteResponse{Term: 7, Granted: true}, nil)
			case <-time.After(2 * time.Second):
			}
		}()
		var resp raft.RequestVoteResponse
		err := from.RequestVote("2", raft.ServerAddress(b.Addr()), &raft.RequestVoteRequest{Term: 7}, &resp)
		if !errors.Is(err, c.want) || (c.want == nil && !resp.Granted) {
			t.Fatalf("grace %v: %v, %+v; want %v", c.grace, err, resp, c.want)
		}
		<-served
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"no node id", Config{BindAddr: "127.0.0.1:0"}},
		{"no bind address", Config{NodeID: 1}},
		{"bad advertise", Config{NodeID: 1, BindAddr: "127.0.0.1:0", AdvertiseAddr: "nohost"}},
		{"wildcard without advertise", Config{NodeID: 1, BindAddr: "0.0.0.0:0"}},
		{"negative call timeout", Config{NodeID: 1, BindAddr: "127.0.0.1:0", Tuning: Tuning{CallTimeout: -1}}},
		{"too many in flight", Config{NodeID: 1, BindAddr: "127.0.0.1:0", Tuning: Tuning{CampaignsInFlight: 1 << 20}}},
	} {
		if h, err := Listen(c.cfg); !errors.Is(err, ErrInvalidConfig) {
			if h != nil {
				h.Close()
			}
			t.Errorf("%s: %v, want ErrInvalidConfig", c.name, err)
		}
	}
	tu := Tuning{CallTimeout: 3 * time.Second}
	if err := tu.Validate(); err != nil || tu.CallTimeout != 3*time.Second || tu.HeartbeatWindow != DefaultTuning().HeartbeatWindow {
		t.Fatalf("Validate keeps set fields and fills defaults: %+v, %v", tu, err)
	}
	if err := (Timing{}).Validate(); err == nil {
		t.Fatal("zero Timing validated")
	}
	if err := DefaultTiming().Validate(); err != nil {
		t.Fatal(err)
	}
}

// The handshake a peer answers carries its incarnation.
func TestHandshakeCarriesIncarnation(t *testing.T) {
	n := newTestNet(t, nil)
	b := n.start(2)
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inc, err := handshake(c)
	if err != nil || inc != b.incarnation || inc == 0 {
		t.Fatalf("incarnation %d, %v; want %d", inc, err, b.incarnation)
	}
	// After it, the connection speaks yamux.
	sess, err := yamux.Client(c, b.yamux)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.Ping(); err != nil {
		t.Fatalf("ping: %v", err)
	}
}

// Calls to a peer that cannot be reached share a failed dial for
// WatchRetryMin instead of each dialing again: thousands of groups of a
// killed node redialed it with every vote, append and heartbeat.
func TestCallsToADeadPeerDoNotRedialEach(t *testing.T) {
	n := newTestNet(t, func(tu *Tuning) { tu.WatchRetryMin, tu.WatchRetryMax = time.Minute, time.Minute })
	a := n.start(1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := raft.ServerAddress(ln.Addr().String())
	ln.Close() // refuses from now on
	from := bareTransport(t, a, "g")
	for range 50 {
		var resp raft.RequestVoteResponse
		err := from.RequestVote("2", dead, &raft.RequestVoteRequest{Term: 7}, &resp)
		var pe *PeerError
		if !errors.As(err, &pe) {
			t.Fatalf("call to a dead peer: %v, want a PeerError", err)
		}
	}
	if got := a.Stats().DialsFailed; got != 1 {
		t.Fatalf("%d failed dials for 50 calls, want 1", got)
	}
}

// Election calls have tokens of their own: a vote goes out while the
// peer's other calls are all in flight (behind the appends of hundreds of
// new leaders, votes waited past their election timeouts).
func TestVotesPassFullCallSlots(t *testing.T) {
	n := newTestNet(t, func(tu *Tuning) { tu.OpenGrace, tu.CallTimeout = time.Nanosecond, 300*time.Millisecond })
	a, b := n.start(1), n.start(2)
	p, err := a.peer(b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	for range cap(p.calls) { // every call token taken, as by appends waiting on a slow disk
		p.calls <- struct{}{}
	}
	from := bareTransport(t, a, "g")
	var resp raft.RequestVoteResponse
	err = from.RequestVote("2", raft.ServerAddress(b.Addr()), &raft.RequestVoteRequest{Term: 7}, &resp)
	if !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("vote with every call token taken: %v, want the peer's answer (ErrUnknownGroup)", err)
	}
	var app raft.AppendEntriesResponse
	if err := from.AppendEntries("2", raft.ServerAddress(b.Addr()), &raft.AppendEntriesRequest{Term: 7}, &app); !errors.Is(err, ErrCallTimeout) {
		t.Fatalf("append with every call token taken: %v, want ErrCallTimeout", err)
	}
}
