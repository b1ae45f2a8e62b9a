package multiraft

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/minikafka/minikafka-go/internal/testcert"
)

// countingConn counts the writes that reach the wire.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// Over TLS, a data frame's header and body leave as one write (one TLS
// record); a frame without a body goes out at once.
func TestCoalescingConnOverTLS(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scfg, err := files.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	ccfg, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	ccfg.ServerName = "localhost"
	a, b := net.Pipe()
	raw := &countingConn{Conn: a}
	client, server := tls.Client(raw, ccfg), tls.Server(b, scfg)
	defer client.Close()
	defer server.Close()
	go func() { _ = server.Handshake() }()
	if err := client.Handshake(); err != nil {
		t.Fatal(err)
	}
	received := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 2*yamuxHeader+5)
		_, err := io.ReadFull(server, buf)
		if err != nil {
			buf = nil
		}
		received <- buf
	}()
	c := &coalescingConn{Conn: client}
	hdr := make([]byte, yamuxHeader)
	hdr[0], hdr[1] = 0, yamuxTypeData
	binary.BigEndian.PutUint32(hdr[8:], 5)
	before := raw.writes.Load()
	if n, err := c.Write(hdr); n != yamuxHeader || err != nil {
		t.Fatalf("header: %d %v", n, err)
	}
	if raw.writes.Load() != before {
		t.Fatal("a data frame's header went out before its body")
	}
	if n, err := c.Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("body: %d %v", n, err)
	}
	if got := raw.writes.Load() - before; got != 1 {
		t.Fatalf("header and body took %d writes, want 1", got)
	}
	ping := make([]byte, yamuxHeader)
	ping[1] = 2 // a ping: no body follows
	if _, err := c.Write(ping); err != nil {
		t.Fatal(err)
	}
	if got := raw.writes.Load() - before; got != 2 {
		t.Fatalf("a frame without a body was held back (%d writes)", got)
	}
	if got := <-received; string(got[yamuxHeader:yamuxHeader+5]) != "hello" || got[yamuxHeader+5+1] != 2 {
		t.Fatalf("received %q", got)
	}
}
