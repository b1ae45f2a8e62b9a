package e2e

import (
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

// echoServers start a TCP and a UDP echo server on node id's IP at one
// port, until the test ends.
func echoServers(t *testing.T, id int) string {
	t.Helper()
	ip := NodeIP(id).String()
	port, err := freePortOn(ip)
	must(t, err)
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	must(t, err)
	u, err := net.ListenPacket("udp", addr)
	must(t, err)
	t.Cleanup(func() { ln.Close(); u.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	go func() {
		b := make([]byte, 1500)
		for {
			n, from, err := u.ReadFrom(b)
			if err != nil {
				return
			}
			u.WriteTo(b[:n], from)
		}
	}()
	return addr
}

// readWithin reads len(want) bytes from c within d; ok is false on a
// timeout.
func readWithin(t *testing.T, c net.Conn, n int, d time.Duration) (string, bool) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	b := make([]byte, n)
	_, err := io.ReadFull(c, b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return "", false
	}
	must(t, err)
	return string(b), true
}

// The Net forwards a node's TCP connections and UDP packets to another
// node's listener; a cut direction holds TCP bytes until the heal (and
// drops UDP packets); a cut of the answers' direction alone stops the
// answers only; a delay delays; traffic from an address that is no
// node's is refused.
func TestNetCutsAndHeals(t *testing.T) {
	n := NewNet(2, t.Logf)
	defer n.Close()
	target := echoServers(t, 2)
	a := proxyAddrs{raft: target, gossip: target}
	must(t, n.listen(2, &a))

	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: NodeIP(1).AsSlice()}}
	c, err := d.Dial("tcp", a.raftProxy)
	must(t, err)
	defer c.Close()
	roundTrip := func(msg string, within time.Duration) (string, bool) {
		_, err := c.Write([]byte(msg))
		must(t, err)
		return readWithin(t, c, len(msg), within)
	}
	if got, ok := roundTrip("hello", 5*time.Second); !ok || got != "hello" {
		t.Fatalf("through the proxy: %q, %v", got, ok)
	}
	n.Cut(1, 2, Raft)
	if got, ok := roundTrip("cut", 300*time.Millisecond); ok {
		t.Fatalf("1->2 cut, yet the echo came back: %q", got)
	}
	n.Heal()
	if got, ok := readWithin(t, c, 3, 5*time.Second); !ok || got != "cut" {
		t.Fatalf("after the heal, the held bytes: %q, %v", got, ok)
	}
	n.Cut(2, 1, Raft) // the answers' direction only
	if got, ok := roundTrip("back", 300*time.Millisecond); ok {
		t.Fatalf("2->1 cut, yet the echo came back: %q", got)
	}
	n.Cut(1, 2, Gossip) // another channel: no effect on Raft
	n.Heal()
	if got, ok := readWithin(t, c, 4, 5*time.Second); !ok || got != "back" {
		t.Fatalf("after the heal, the held answer: %q, %v", got, ok)
	}
	n.Delay(1, 2, 300*time.Millisecond, Raft)
	t0 := time.Now()
	if got, ok := roundTrip("slow", 5*time.Second); !ok || got != "slow" || time.Since(t0) < 300*time.Millisecond {
		t.Fatalf("delayed round trip: %q, %v after %v", got, ok, time.Since(t0))
	}
	n.Heal()

	u, err := net.ListenUDP("udp", &net.UDPAddr{IP: NodeIP(1).AsSlice()})
	must(t, err)
	defer u.Close()
	gp, err := net.ResolveUDPAddr("udp", a.gossipProxy)
	must(t, err)
	packet := func(msg string, within time.Duration) bool {
		_, err := u.WriteToUDP([]byte(msg), gp)
		must(t, err)
		u.SetReadDeadline(time.Now().Add(within))
		b := make([]byte, 100)
		m, _, err := u.ReadFromUDP(b)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return false
		}
		must(t, err)
		if string(b[:m]) != msg {
			t.Fatalf("UDP echo %q, want %q", b[:m], msg)
		}
		return true
	}
	if !packet("ping", 5*time.Second) {
		t.Fatal("no UDP echo through the proxy")
	}
	n.Cut(2, 1, Gossip)
	if packet("lost", 300*time.Millisecond) {
		t.Fatal("2->1 gossip cut, yet the UDP echo came back")
	}
	n.Heal()
	if !packet("again", 5*time.Second) {
		t.Fatal("no UDP echo after the heal")
	}

	stranger, err := net.Dial("tcp", a.raftProxy) // from 127.0.0.1
	must(t, err)
	defer stranger.Close()
	stranger.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := stranger.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a connection from 127.0.0.1: %v, want it closed", err)
	}
	if n.Refused() != 1 {
		t.Fatalf("Refused() = %d, want 1", n.Refused())
	}
}
