package yamux

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

// gatedConn records the size of each write; once armed, its next write
// waits for release, then writes, or fails with fail if set.
type gatedConn struct {
	io.ReadWriteCloser
	mu      sync.Mutex
	sizes   []int
	armed   bool
	entered chan struct{}
	release chan struct{}
	fail    error
}

func (c *gatedConn) arm(fail error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.fail, c.sizes = true, fail, nil
	c.entered, c.release = make(chan struct{}), make(chan struct{})
}

func (c *gatedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	armed, entered, release, fail := c.armed, c.entered, c.release, c.fail
	c.armed = false
	c.sizes = append(c.sizes, len(p))
	c.mu.Unlock()
	if armed {
		close(entered)
		<-release
		if fail != nil {
			return 0, fail
		}
	}
	return c.ReadWriteCloser.Write(p)
}

func (c *gatedConn) writes() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.sizes...)
}

// batchSetup opens n streams from a client session over TCP whose writes go
// through a gatedConn; the server's side of each stream is read into got.
type batchSetup struct {
	conn    *gatedConn
	client  *Session
	streams []*Stream
	got     []bytes.Buffer
	readers sync.WaitGroup
}

func newBatchSetup(t *testing.T, n int) *batchSetup {
	c, s := testConnTCP(t)
	conf := testConfNoKeepAlive()
	conf.ConnectionWriteTimeout = 10 * time.Second
	b := &batchSetup{conn: &gatedConn{ReadWriteCloser: c}, got: make([]bytes.Buffer, n)}
	var server *Session
	b.client, server = testClientServerConfig(t, b.conn, s, conf, conf)
	for i := 0; i < n; i++ {
		st, err := b.client.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		b.streams = append(b.streams, st)
		if _, err := st.Write([]byte{byte(i)}); err != nil { // opens it on the server
			t.Fatal(err)
		}
		in, err := server.AcceptStream()
		if err != nil {
			t.Fatal(err)
		}
		id := make([]byte, 1)
		if _, err := io.ReadFull(in, id); err != nil || int(id[0]) != i {
			t.Fatalf("stream %d opened as %v: %v", i, id, err)
		}
		b.readers.Add(1)
		go func(i int) {
			defer b.readers.Done()
			_, _ = io.Copy(&b.got[i], in)
		}(i)
	}
	return b
}

// queue writes payload(i) on streams 1..n-1 while the send loop is held in
// a write of stream 0's frame, waits until all are queued, then releases
// the write; it returns each write's error, stream 0's first.
func (b *batchSetup) queue(t *testing.T, fail error, payload func(int) []byte) []error {
	b.conn.arm(fail)
	errs := make([]error, len(b.streams))
	var writers sync.WaitGroup
	write := func(i int) {
		defer writers.Done()
		_, errs[i] = b.streams[i].Write(payload(i))
	}
	writers.Add(1)
	go write(0)
	<-b.conn.entered
	for i := 1; i < len(b.streams); i++ {
		writers.Add(1)
		go write(i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(b.client.sendCh) < len(b.streams)-1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d frames queued", len(b.client.sendCh), len(b.streams)-1)
		}
		time.Sleep(time.Millisecond)
	}
	close(b.conn.release)
	writers.Wait()
	return errs
}

// close closes the streams and waits for the server to have read them.
func (b *batchSetup) close(t *testing.T) {
	for _, st := range b.streams {
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b.readers.Wait()
}

// Frames queued while the send loop writes go out together in its next
// write, each intact on its own stream.
func TestSendBatchQueuedFramesInOneWrite(t *testing.T) {
	b := newBatchSetup(t, 8)
	payload := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 100+i) }
	for i, err := range b.queue(t, nil, payload) {
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	sizes := b.conn.writes()
	want := []int{headerSize + len(payload(0)), 0}
	for i := 1; i < 8; i++ {
		want[1] += headerSize + len(payload(i))
	}
	if len(sizes) != 2 || sizes[0] != want[0] || sizes[1] != want[1] {
		t.Fatalf("writes of %v bytes, want %v", sizes, want)
	}
	b.close(t)
	for i := range b.got {
		if got := b.got[i].Bytes(); !bytes.Equal(got, payload(i)) {
			t.Fatalf("stream %d read %q", i, got)
		}
	}
}

// A write gathers at most sendBatchFrames frames and stops adding once it
// holds sendBatchBytes; what is left stays queued for the next.
func TestSendBatchBoundsOneWrite(t *testing.T) {
	for _, c := range []struct {
		queued, size, want int
	}{
		{100, 10, sendBatchFrames},
		{40, 16 << 10, sendBatchBytes/(headerSize+16<<10) + 1},
		{3, 1 << 20, 1},
		{5, 10, 5},
	} {
		ch := make(chan *sendReady, c.queued)
		for i := 0; i < c.queued; i++ {
			ch <- &sendReady{Hdr: make([]byte, headerSize), Body: make([]byte, c.size), Err: make(chan error, 1)}
		}
		var b sendBatch
		b.add(<-ch)
		b.gather(ch)
		if len(b.ready) != c.want || len(b.buf) != c.want*(headerSize+c.size) || len(ch) != c.queued-c.want {
			t.Fatalf("%d queued frames of %d: gathered %d (%d bytes), %d left; want %d",
				c.queued+1, c.size, len(b.ready), len(b.buf), len(ch), c.want)
		}
		for _, r := range b.ready {
			if r.Body != nil {
				t.Fatal("a gathered frame still holds its body")
			}
		}
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// A write answers every frame it held with its result, and the batch is
// empty after it.
func TestSendBatchWriteAnswersEveryFrame(t *testing.T) {
	broken := errors.New("broken")
	for _, w := range []io.Writer{io.Discard, failingWriter{broken}} {
		var b sendBatch
		var frames []*sendReady
		for i := 0; i < 5; i++ {
			r := &sendReady{Hdr: make([]byte, headerSize), Body: []byte("x"), Err: make(chan error, 1)}
			frames = append(frames, r)
			b.add(r)
		}
		err := b.write(w)
		want := error(nil)
		if _, ok := w.(failingWriter); ok {
			want = broken
		}
		if !errors.Is(err, want) || len(b.buf) != 0 || len(b.ready) != 0 {
			t.Fatalf("write: %v (want %v), %d bytes and %d frames left", err, want, len(b.buf), len(b.ready))
		}
		for i, r := range frames {
			select {
			case got := <-r.Err:
				if !errors.Is(got, want) {
					t.Fatalf("frame %d answered %v, want %v", i, got, want)
				}
			default:
				t.Fatalf("frame %d not answered", i)
			}
		}
	}
}
