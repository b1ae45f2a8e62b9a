package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/frame"
)

// apiVersionsFrame is an ApiVersions v0 request with correlation id 1.
func apiVersionsFrame() []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e-idle")).AppendRequest(nil, req, 1)
}

// ErrRefused means the node closed a connection instead of answering.
var ErrRefused = errors.New("e2e: connection closed by the node")

// readAnswer reads the answer to apiVersionsFrame on nc, or ErrRefused.
func readAnswer(nc net.Conn, deadline time.Time) error {
	_ = nc.SetReadDeadline(deadline)
	body, err := frame.Read(nc, 4, 1<<20)
	switch {
	case closedByPeer(err):
		return ErrRefused
	case err != nil:
		return err
	case binary.BigEndian.Uint32(body) != 1:
		return fmt.Errorf("e2e: correlation id %d, want 1", binary.BigEndian.Uint32(body))
	}
	return nil
}

// openServed opens n connections to addr and checks that the node serves
// each (an ApiVersions answered on all of them, pipelined); they are
// appended to *conns even on error, for the caller to close. It returns
// how many the node refused.
func openServed(ctx context.Context, addr string, n int, conns *[]net.Conn) (refused int, err error) {
	req := apiVersionsFrame()
	var d net.Dialer
	start := len(*conns)
	for range n {
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return 0, fmt.Errorf("e2e: connection %d: %w", len(*conns)-start, err)
		}
		*conns = append(*conns, nc)
		_ = nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write(req); err != nil && !closedByPeer(err) {
			return 0, err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for i, nc := range (*conns)[start:] {
		switch err := readAnswer(nc, deadline); {
		case errors.Is(err, ErrRefused):
			refused++
		case err != nil:
			return refused, fmt.Errorf("e2e: connection %d: %w", i, err)
		}
	}
	return refused, nil
}

// caseIdleConnections opens e.idle connections to the leader of
// topicScratch; the node must serve every one (max_connections leaves
// room for them); it must still serve a produce and a fetch while they are
// open; connections past max_connections must be closed; and after they
// all close, the node's open file count must come back near where it was.
func caseIdleConnections(ctx context.Context, t *testing.T, e *badEnv) string {
	l, err := e.c.Leader(ctx, topicScratch, 0)
	must(t, err)
	addr := e.c.Node(l.Node).KafkaAddr
	pid, err := e.c.Pid(l.Node)
	must(t, err)
	fdsBefore, err := OpenFiles(pid)
	must(t, err)
	var conns []net.Conn
	closeAll := func() {
		for _, nc := range conns {
			nc.Close()
		}
		conns = nil
	}
	defer closeAll()

	start := time.Now()
	refused, err := openServed(ctx, addr, e.idle, &conns)
	must(t, err)
	if refused > 0 {
		t.Fatalf("node %d refused %d of %d connections, below its max_connections %d", l.Node, refused, e.idle, e.maxConns)
	}
	fdsOpen, err := OpenFiles(pid)
	must(t, err)
	t.Logf("node %d serves %d idle connections (opened in %v); open files %d -> %d",
		l.Node, e.idle, time.Since(start).Round(time.Millisecond), fdsBefore, fdsOpen)
	e.serves(ctx, t)

	// Twice the room left: at least connMargin of these are refused.
	extra := 2 * connMargin
	refused, err = openServed(ctx, addr, extra, &conns)
	must(t, err)
	if refused < extra-connMargin || e.idle+extra-refused > e.maxConns {
		t.Fatalf("past %d idle connections, %d of %d more refused; want at least %d (max_connections %d)",
			e.idle, refused, extra, extra-connMargin, e.maxConns)
	}
	t.Logf("past %d idle connections, %d of %d more were refused (max_connections %d)", e.idle, refused, extra, e.maxConns)

	closeAll()
	var fdsAfter int
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = poll(pctx, "open files back near the baseline", func() (bool, error) {
		n, err := OpenFiles(pid)
		fdsAfter = n
		return err == nil && n <= fdsBefore+connMargin, err
	})
	if err != nil {
		t.Fatalf("node %d: %d open files after closing every connection, %d before: %v", l.Node, fdsAfter, fdsBefore, err)
	}
	return fmt.Sprintf("%d served, %d/%d past the limit refused; fds %d -> %d -> %d", e.idle, refused, extra, fdsBefore, fdsOpen, fdsAfter)
}
