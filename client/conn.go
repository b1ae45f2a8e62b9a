package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/frame"
)

// maxResponseSize bounds a response frame, so that garbage on the wire
// cannot make us allocate without limit.
const maxResponseSize = 256 << 20

// call is one request on a connection. cb is called exactly once, from the
// connection's goroutines (or from send if the connection is already
// dead), so it must not block and must not be called with a lock that cb
// takes.
type call struct {
	req   kmsg.Request
	cb    func(kmsg.Response, error)
	extra time.Duration // broker-side wait (fetch max wait) added to the request timeout

	corr     int32
	deadline time.Time
}

// noResponse reports whether the broker sends no response: a produce with
// acks=0.
func (c *call) noResponse() bool {
	p, ok := c.req.(*kmsg.ProduceRequest)
	return ok && p.Acks == 0
}

// conn is one TCP connection to a broker, pipelining requests: a writer
// goroutine dials, learns the broker's API versions, then writes queued
// requests in order; a reader goroutine matches responses, which Kafka
// sends in request order, to the oldest written request. Any failure kills
// the connection and fails every request on it; the cluster then dials a
// new one on the next send.
type conn struct {
	node   int32
	addr   string
	cfg    *config
	log    *slog.Logger
	onDead func(*conn)
	fmt    *kmsg.RequestFormatter

	mu      sync.Mutex // guards the fields below
	queue   []*call    // accepted, not yet written, in send order
	pending []*call    // written and awaiting a response, in send order
	dead    error      // non-nil once the connection failed or closed
	nc      net.Conn   // nil until dialed
	vers    map[int16][2]int16
	corr    int32
	timer   *time.Timer // request timeout of the earliest pending deadline

	wake   chan struct{} // capacity 1: the writer has queued work
	quit   chan struct{} // closed when the connection dies
	exited chan struct{} // closed when both goroutines have returned
}

func newConn(ctx context.Context, cfg *config, node int32, addr string, onDead func(*conn)) *conn {
	c := &conn{
		node: node, addr: addr, cfg: cfg, onDead: onDead,
		log:    cfg.logger.With("broker", node, "addr", addr),
		fmt:    kmsg.NewRequestFormatter(kmsg.FormatterClientID(cfg.clientID)),
		wake:   make(chan struct{}, 1),
		quit:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go c.writeLoop(ctx)
	return c
}

// send queues a request. If the connection is dead, cb is called at once
// with the error, from the caller's goroutine.
func (c *conn) send(cl *call) {
	c.mu.Lock()
	if err := c.dead; err != nil {
		c.mu.Unlock()
		cl.cb(nil, &ConnError{Node: c.node, Addr: c.addr, Err: err})
		return
	}
	c.queue = append(c.queue, cl)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// close kills the connection and waits for its goroutines.
func (c *conn) close() {
	c.die(ErrClosed, false)
	<-c.exited
}

func (c *conn) isDead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead != nil
}

// die marks the connection dead and fails every request on it. Requests
// already written may have reached the broker; queued ones did not.
func (c *conn) die(err error, logIt bool) {
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		return
	}
	c.dead = err
	queued, pending := c.queue, c.pending
	c.queue, c.pending = nil, nil
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.nc != nil {
		c.nc.Close()
	}
	close(c.quit)
	c.mu.Unlock()

	if logIt {
		c.log.Debug("connection failed", "err", err, "in_flight", len(pending))
	}
	for _, cl := range pending {
		cl.cb(nil, &ConnError{Node: c.node, Addr: c.addr, Err: err, written: true})
	}
	for _, cl := range queued {
		cl.cb(nil, &ConnError{Node: c.node, Addr: c.addr, Err: err})
	}
	c.onDead(c)
}

// writeLoop is the connection's main goroutine; the reader is its child.
func (c *conn) writeLoop(ctx context.Context) {
	defer close(c.exited)
	nc := c.connect(ctx)
	if nc == nil {
		return
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		c.readLoop(nc)
	}()
	defer func() { <-readerDone }() // die closed nc, so the reader returns

	var out outgoing
	for {
		select {
		case <-c.quit:
			return
		case <-c.wake:
		}
		c.mu.Lock()
		if c.dead != nil {
			c.mu.Unlock()
			return
		}
		c.encodeQueuedLocked(&out, time.Now())
		c.mu.Unlock()

		for _, f := range out.unsupported {
			f.cl.cb(nil, f.err)
		}
		if len(out.buf) == 0 {
			continue
		}
		if err := c.write(nc, &out); err != nil {
			c.die(err, true)
			return
		}
	}
}

// connect dials the broker and learns its API versions. It returns nil when
// either fails (the connection is then dead) or the connection was closed
// meanwhile.
func (c *conn) connect(ctx context.Context) net.Conn {
	dctx, cancel := context.WithTimeout(ctx, c.cfg.dialTimeout)
	nc, err := c.cfg.dialer(dctx, "tcp", c.addr)
	cancel()
	if err != nil {
		c.die(err, true)
		return nil
	}
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		nc.Close()
		return nil
	}
	c.nc = nc
	c.mu.Unlock()

	vers, err := c.handshake(nc)
	if err == nil && c.cfg.sasl != nil {
		err = c.authenticate(nc, vers)
	}
	if err != nil {
		c.die(err, true)
		return nil
	}
	c.mu.Lock()
	c.vers = vers
	c.mu.Unlock()
	return nc
}

// outgoing is one write's worth of queued requests, reused across writes.
type outgoing struct {
	buf         []byte       // the frames to write, in queue order
	unsupported []failedCall // requests no common version fits: never written
	noResp      []*call      // requests the broker will not answer (acks=0)
}

type failedCall struct {
	cl  *call
	err error
}

// encodeQueuedLocked takes every queued request, gives it a version and a
// correlation id, appends its frame to out.buf and moves it to pending
// (with its deadline) unless it gets no response. Called with c.mu.
func (c *conn) encodeQueuedLocked(out *outgoing, now time.Time) {
	batch := c.queue
	c.queue = nil
	out.buf, out.unsupported, out.noResp = out.buf[:0], nil, nil
	for _, cl := range batch {
		v, verr := c.pickVersion(cl.req.Key())
		if verr != nil {
			out.unsupported = append(out.unsupported, failedCall{cl, verr})
			continue
		}
		cl.req.SetVersion(v)
		c.corr++
		cl.corr = c.corr
		out.buf = appendFrame(out.buf, c.fmt, cl.req, cl.corr)
		if cl.noResponse() {
			out.noResp = append(out.noResp, cl)
			continue
		}
		cl.deadline = now.Add(c.cfg.requestTimeout + cl.extra)
		c.pending = append(c.pending, cl)
	}
	c.armTimerLocked(now)
}

// appendFrame appends req's frame to buf. AppendRequest writes the
// frame's size at the start of the slice it is given, so it is given the
// empty tail of buf: within buf's capacity the frame is built in place,
// and a produce request's batches are copied once, not twice.
func appendFrame(buf []byte, f *kmsg.RequestFormatter, req kmsg.Request, corr int32) []byte {
	start := len(buf)
	frame := f.AppendRequest(buf[start:], req, corr)
	if start < cap(buf) && len(frame) > 0 && &frame[0] == &buf[:start+1][start] {
		return buf[:start+len(frame)] // built in place
	}
	return append(buf, frame...) // AppendRequest outgrew buf
}

// write writes the encoded frames. A request without a response completes
// when the write does; the others wait for the reader.
func (c *conn) write(nc net.Conn, out *outgoing) error {
	if _, err := nc.Write(out.buf); err != nil {
		for _, cl := range out.noResp {
			cl.cb(nil, &ConnError{Node: c.node, Addr: c.addr, Err: err, written: true})
		}
		return err
	}
	for _, cl := range out.noResp {
		cl.cb(nil, nil)
	}
	return nil
}

// armTimerLocked points the request timer at the earliest pending
// deadline. Called with c.mu.
func (c *conn) armTimerLocked(now time.Time) {
	if len(c.pending) == 0 {
		if c.timer != nil {
			c.timer.Stop()
		}
		return
	}
	earliest := c.pending[0].deadline
	for _, cl := range c.pending[1:] {
		if cl.deadline.Before(earliest) {
			earliest = cl.deadline
		}
	}
	d := earliest.Sub(now)
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.checkTimeout)
	} else {
		c.timer.Reset(d)
	}
}

// checkTimeout kills the connection if a pending request is past its
// deadline: its outcome is unknown, and Kafka answers in order, so nothing
// behind it can be answered either.
func (c *conn) checkTimeout() {
	now := time.Now()
	c.mu.Lock()
	expired := false
	for _, cl := range c.pending {
		if !now.Before(cl.deadline) {
			expired = true
			break
		}
	}
	if !expired && c.dead == nil {
		c.armTimerLocked(now)
	}
	c.mu.Unlock()
	if expired {
		c.die(ErrRequestTimeout, true)
	}
}

// readFrame reads one size-prefixed response frame.
func readFrame(r io.Reader) ([]byte, error) {
	return frame.Read(r, 4, maxResponseSize)
}

func (c *conn) readLoop(nc net.Conn) {
	for {
		body, err := readFrame(nc)
		if err != nil {
			c.die(err, true)
			return
		}
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.mu.Unlock()
			c.die(errors.New("response without a request"), true)
			return
		}
		cl := c.pending[0]
		c.pending = c.pending[1:]
		c.armTimerLocked(time.Now())
		c.mu.Unlock()

		if corr := int32(binary.BigEndian.Uint32(body)); corr != cl.corr {
			// Put it back so die fails it as written.
			c.mu.Lock()
			c.pending = append([]*call{cl}, c.pending...)
			c.mu.Unlock()
			c.die(fmt.Errorf("correlation id %d, want %d", corr, cl.corr), true)
			return
		}
		resp := cl.req.ResponseKind()
		resp.SetVersion(cl.req.GetVersion())
		body = body[4:]
		if resp.IsFlexible() && resp.Key() != 18 {
			if body, err = skipTags(body); err != nil {
				cl.cb(nil, err)
				continue
			}
		}
		if err := resp.ReadFrom(body); err != nil {
			cl.cb(nil, fmt.Errorf("decoding %s response: %w", kmsg.NameForKey(resp.Key()), err))
			continue
		}
		cl.cb(resp, nil)
	}
}

// skipTags skips a flexible response header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, errors.New("bad response header tags")
	}
	b = b[l:]
	for range n {
		if _, l = binary.Uvarint(b); l <= 0 {
			return nil, errors.New("bad response header tag")
		}
		b = b[l:]
		size, l := binary.Uvarint(b)
		if l <= 0 || size > uint64(len(b)-l) {
			return nil, errors.New("bad response header tag size")
		}
		b = b[l+int(size):]
	}
	return b, nil
}
