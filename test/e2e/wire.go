package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/frame"
)

// Conn is one raw Kafka connection, for hand-built requests (the seed's
// lab) and for probing a paused node: Send can queue a request that the
// node reads only when it runs again, and Receive waits for its answer.
// Requests must carry an explicit version (SetVersion); there is no
// ApiVersions handshake. A Conn is used from one goroutine.
type Conn struct {
	nc   net.Conn
	fmt  *kmsg.RequestFormatter
	corr int32
	sent []kmsg.Request // requests sent and not yet received, in order
}

// Dial connects to a Kafka listener.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e"))}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Send writes one request without waiting for its answer.
func (c *Conn) Send(req kmsg.Request) error {
	c.corr++
	if _, err := c.nc.Write(c.fmt.AppendRequest(nil, req, c.corr)); err != nil {
		return err
	}
	c.sent = append(c.sent, req)
	return nil
}

// maxFrame bounds a response frame.
const maxFrame = 256 << 20

// ErrNothingSent is returned by Receive when no request awaits an answer.
var ErrNothingSent = errors.New("e2e: no request awaiting a response")

// Receive reads the answer to the oldest request sent and not yet
// received, waiting until ctx ends; after that the Conn is unusable.
func (c *Conn) Receive(ctx context.Context) (kmsg.Response, error) {
	if len(c.sent) == 0 {
		return nil, ErrNothingSent
	}
	req := c.sent[0]
	c.sent = c.sent[1:]
	wantCorr := c.corr - int32(len(c.sent))

	stop := context.AfterFunc(ctx, func() { c.nc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	body, err := frame.Read(c.nc, 4, maxFrame)
	if err != nil {
		return nil, errors.Join(err, ctx.Err())
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != wantCorr {
		return nil, fmt.Errorf("e2e: correlation id %d, want %d", corr, wantCorr)
	}
	body = body[4:]
	if req.IsFlexible() && req.Key() != 18 { // ApiVersions answers without header tags
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, err
		}
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("e2e: decode %T: %w", resp, err)
	}
	return resp, nil
}

// RoundTrip sends req and waits for its answer.
func (c *Conn) RoundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if err := c.Send(req); err != nil {
		return nil, err
	}
	return c.Receive(ctx)
}

// Request sends one request on a new connection and returns the answer.
func Request(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	c, err := Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.RoundTrip(ctx, req)
}

// skipTags skips a response header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("e2e: bad header tag count")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("e2e: bad header tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errors.New("e2e: bad header tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}
