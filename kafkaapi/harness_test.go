package kafkaapi

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/record"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// failsafe bounds every blocking read in tests so that a bug fails the test
// instead of hanging it. No test waits for it to pass. 60 s: under make
// test's load (two packages at once, node processes of the e2e suite) a
// franz-go client once took over 20 s to send its first fetch.
const failsafe = 60 * time.Second

// harness is a Server on 127.0.0.1 over a fakeBackend.
type harness struct {
	t    *testing.T
	srv  *Server
	fb   *fakeBackend
	addr string
}

func startServer(t *testing.T, cfg Config) *harness {
	t.Helper()
	return startServerWith(t, cfg, func(fb *fakeBackend) Backend { return fb })
}

// startServerWith serves the backend that wrap makes of the fake one
// (to add optional capabilities).
func startServerWith(t *testing.T, cfg Config, wrap func(*fakeBackend) Backend) *harness {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb := newFakeBackend("127.0.0.1", int32(l.Addr().(*net.TCPAddr).Port))
	if cfg.Logger == nil {
		cfg.Logger = logging.Discard()
	}
	srv, err := New(wrap(fb), cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), l) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve returned %v", err)
		}
	})
	return &harness{t: t, srv: srv, fb: fb, addr: l.Addr().String()}
}

// client speaks the Kafka protocol by hand, one frame at a time.
type client struct {
	t    *testing.T
	nc   net.Conn
	br   *bufio.Reader
	corr int32
}

func (h *harness) dial() *client {
	h.t.Helper()
	nc, err := net.Dial("tcp", h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { nc.Close() })
	return &client{t: h.t, nc: nc, br: bufio.NewReader(nc)}
}

// requireServing proves the server still answers a new connection.
func (h *harness) requireServing() {
	h.t.Helper()
	c := h.dial()
	resp := c.roundTrip(apiVersionsRequest(3)).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(apis) {
		h.t.Fatalf("ApiVersions on a new connection: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	c.nc.Close()
}

// send writes a request and returns its correlation id.
func (c *client) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kafkaapi-test"))
	c.write(f.AppendRequest(nil, req, c.corr))
	return c.corr
}

func (c *client) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame and returns its correlation id and
// the rest.
func (c *client) readFrame() (int32, []byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(failsafe))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return 0, nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return 0, nil, err
	}
	if len(buf) < 4 {
		c.t.Fatalf("response frame of %d bytes", len(buf))
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:], nil
}

// read decodes the next response into resp (whose version must be set) and
// returns its correlation id.
func (c *client) read(resp kmsg.Response) int32 {
	c.t.Helper()
	corr, body, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		b := kbin.Reader{Src: body}
		kmsg.SkipTags(&b)
		if err := b.Complete(); err != nil {
			c.t.Fatalf("response header tags: %v", err)
		}
		body = b.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %T v%d: %v", resp, resp.GetVersion(), err)
	}
	return corr
}

// roundTrip sends req and reads its response.
func (c *client) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.send(req)
	resp := req.ResponseKind()
	if got := c.read(resp); got != corr {
		c.t.Fatalf("response correlation id %d, want %d", got, corr)
	}
	return resp
}

// requireClosed reads until the server closes the connection; it fails if
// the connection stays open past the failsafe.
func (c *client) requireClosed() {
	c.t.Helper()
	for {
		_, _, err := c.readFrame()
		if err == nil {
			continue // a response to an earlier request
		}
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			c.t.Fatal("connection still open")
		}
		return // EOF or reset: closed
	}
}

// frameWith builds a raw frame: size prefix, then body.
func frameWith(size int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	return append(b, body...)
}

func apiVersionsRequest(version int16) *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = version
	req.ClientSoftwareName = "kafkaapi-test"
	req.ClientSoftwareVersion = "1.0"
	return req
}

// makeBatch builds a valid v2 batch holding one record per value, the
// first with timestamp firstTS and each next one a millisecond later.
func makeBatch(firstTS int64, values ...string) []byte {
	return makeProducerBatch(firstTS, record.NoProducerID, record.NoProducerEpoch, record.NoSequence, values...)
}

func makeProducerBatch(firstTS, pid int64, epoch int16, seq int32, values ...string) []byte {
	b := make([]byte, record.HeaderSize)
	binary.BigEndian.PutUint32(b[12:], 0xFFFFFFFF) // partition leader epoch -1
	b[16] = 2                                      // magic
	n := int32(len(values))
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(firstTS))
	binary.BigEndian.PutUint64(b[35:], uint64(firstTS+int64(n)-1))
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	for i, v := range values {
		var r []byte
		r = append(r, 0)                        // attributes
		r = kbin.AppendVarlong(r, int64(i))     // timestamp delta
		r = kbin.AppendVarint(r, int32(i))      // offset delta
		r = kbin.AppendVarint(r, -1)            // null key
		r = kbin.AppendVarint(r, int32(len(v))) // value
		r = append(r, v...)
		r = kbin.AppendVarint(r, 0) // no headers
		b = kbin.AppendVarint(b, int32(len(r)))
		b = append(b, r...)
	}
	record.FinishBatch(b)
	return b
}

// produceRequest builds a Produce request for one topic.
func produceRequest(version, acks int16, topic string, batches map[int32][]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = acks
	req.TimeoutMillis = int32(failsafe / time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for _, p := range slices.Sorted(maps.Keys(batches)) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = batches[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchRequest builds a Fetch request for partitions of one topic, each
// from the given offset.
func fetchRequest(version int16, topic string, maxWait time.Duration, minBytes int32, offsets ...int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	req.MinBytes = minBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p, off := range offsets {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = int32(p)
		rp.FetchOffset = off
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// eventually polls cond until it holds, failing after the failsafe.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
