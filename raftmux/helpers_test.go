package raftmux

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/logging"
)

// newMux listens on 127.0.0.1:0 and closes the Mux when the test ends.
func newMux(t testing.TB, cfg Config) *Mux {
	t.Helper()
	if cfg.BindAddr == "" {
		cfg.BindAddr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = logging.Discard()
	}
	m, err := Listen(cfg)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Mux.Close: %v", err)
		}
	})
	return m
}

// mustListener registers name on m; the listener closes when the test ends.
func mustListener(t testing.TB, m *Mux, name string) net.Listener {
	t.Helper()
	l, err := m.Listener(name)
	if err != nil {
		t.Fatalf("Listener(%q): %v", name, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// serveEcho answers each conn accepted on l with tag and a newline, then
// echoes what it reads until EOF. The returned func waits until Accept has
// failed and every handler has ended, and returns Accept's error. The test's
// end closes l and waits too.
func serveEcho(t testing.TB, l net.Listener, tag string) (wait func() error) {
	t.Helper()
	var (
		wg        sync.WaitGroup // the accept loop and its handlers
		acceptErr error          // written by the accept loop before wg.Done
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				acceptErr = err
				return
			}
			wg.Go(func() {
				defer func() { _ = c.Close() }()
				if _, err := io.WriteString(c, tag+"\n"); err != nil {
					return
				}
				_, _ = io.Copy(c, c)
			})
		}
	})
	wait = func() error { wg.Wait(); return acceptErr }
	t.Cleanup(func() { _ = l.Close(); _ = wait() })
	return wait
}

// echo dials channel name at addr through m, checks the server's tag and
// that payload comes back intact.
func echo(ctx context.Context, m *Mux, addr, name string, payload []byte) (tag string, err error) {
	c, err := m.Dial(ctx, addr, name)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	r := bufio.NewReader(c)
	tag, err = r.ReadString('\n')
	if err != nil {
		return "", err
	}
	tag = tag[:len(tag)-1]
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	got, rerr := io.ReadAll(r)
	if err := errors.Join(<-werr, rerr); err != nil {
		return tag, err
	}
	if !bytes.Equal(got, payload) {
		return tag, errors.New("echo: payload corrupted")
	}
	return tag, nil
}

// payload is n deterministic, non-repeating-looking bytes.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i/251)
	}
	return b
}

// testCtx is a context bounded well below the test binary's timeout.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// readUntilClosed reads c until the peer closes it and returns what it read.
// It fails the test if c is still open after 10s.
func readUntilClosed(t testing.TB, c net.Conn) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("conn still open after 10s (read %q)", got)
	}
	// io.EOF (ReadAll returns nil) or a reset: either way the peer closed it.
	return got
}

// waitFor polls cond until it holds or 15s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
