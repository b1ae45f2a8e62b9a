package raftmux

import (
	"context"
	"io"
	"testing"
)

// BenchmarkMuxDialAndEcho measures a full channel connection: dial, header
// exchange, hand-off, one 64-byte echo, close.
func BenchmarkMuxDialAndEcho(b *testing.B) {
	client, server := newMux(b, Config{}), newMux(b, Config{})
	serveEcho(b, mustListener(b, server, "rpc/bench"), "b")
	addr := server.Addr().String()
	msg := payload(64)
	buf := make([]byte, 2+len(msg)) // tag "b\n", then the echo
	ctx := context.Background()
	for b.Loop() {
		c, err := client.Dial(ctx, addr, "rpc/bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
		if string(buf) != "b\n"+string(msg) {
			b.Fatalf("echo returned %q", buf)
		}
	}
}
