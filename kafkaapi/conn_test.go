package kafkaapi

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/logging"
)

// badInput sends raw bytes that must make the server close that
// connection, and proves that a connection opened before, and one opened
// after, are still served.
func badInput(t *testing.T, raw []byte) {
	h := startServer(t, Config{})
	bystander := h.dial()
	bystander.roundTrip(apiVersionsRequest(3))

	c := h.dial()
	c.write(raw)
	c.requireClosed()

	bystander.roundTrip(apiVersionsRequest(3))
	h.requireServing()
}

func TestGarbageBytesCloseConnection(t *testing.T) {
	// A Produce v9 header followed by bytes that are not a Produce body.
	body := binary.BigEndian.AppendUint16(nil, 0)  // key Produce
	body = binary.BigEndian.AppendUint16(body, 9)  // version
	body = binary.BigEndian.AppendUint32(body, 7)  // correlation id
	body = binary.BigEndian.AppendUint16(body, 0)  // empty client id
	body = append(body, 0)                         // no header tags
	body = append(body, 0xff, 0xff, 0xff, 0x13, 1) // garbage
	badInput(t, frameWith(int32(len(body)), body))
}

func TestFrameOf2GiBClosesConnection(t *testing.T) {
	// 2 GiB - 1, the largest int32 size: over the 100 MiB limit. The server
	// must not try to allocate it.
	badInput(t, frameWith(math.MaxInt32, []byte("x")))
}

func TestNegativeFrameSizeClosesConnection(t *testing.T) {
	badInput(t, frameWith(-1, nil))
}

func TestFrameTooSmallForHeaderClosesConnection(t *testing.T) {
	badInput(t, frameWith(3, []byte{0, 18, 0}))
}

func TestUnknownAPIKeyClosesConnection(t *testing.T) {
	body := binary.BigEndian.AppendUint16(nil, 999) // no such key
	body = binary.BigEndian.AppendUint16(body, 0)
	body = binary.BigEndian.AppendUint32(body, 1)
	body = binary.BigEndian.AppendUint16(body, 0xffff) // null client id
	badInput(t, frameWith(int32(len(body)), body))
}

func TestUnadvertisedAPIClosesConnection(t *testing.T) {
	// AlterReplicaLogDirs is a real Kafka API that we do not advertise.
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.Version = 1
	badInput(t, kmsg.NewRequestFormatter().AppendRequest(nil, req, 1))
}

func TestUnadvertisedVersionClosesConnection(t *testing.T) {
	// Produce v2 is below our minimum (message sets v1, not batches).
	req := kmsg.NewPtrProduceRequest()
	req.Version = 2
	badInput(t, kmsg.NewRequestFormatter().AppendRequest(nil, req, 1))
}

// A frame over a configured small limit closes the connection.
func TestMaxRequestBytesIsHonoured(t *testing.T) {
	h := startServer(t, Config{MaxRequestBytes: 64})
	c := h.dial()
	c.roundTrip(apiVersionsRequest(3)) // small: fine
	big := produceRequest(3, -1, "t", map[int32][]byte{0: makeBatch(1, "a fairly long value that does not fit")})
	c.send(big)
	c.requireClosed()
	h.requireServing()
}

// Responses come back in request order even when an earlier request
// finishes after a later one.
func TestPipelinedResponsesInRequestOrder(t *testing.T) {
	h := startServer(t, Config{})
	slow := h.fb.addTopic("slow", 1)[0]
	fast := h.fb.addTopic("fast", 1)[0]
	slow.set(func(p *fakePartition) { p.hold = true })

	c := h.dial()
	first := c.send(produceRequest(9, -1, "slow", map[int32][]byte{0: makeBatch(1, "s")}))
	second := c.send(produceRequest(9, -1, "fast", map[int32][]byte{0: makeBatch(1, "f")}))
	third := c.send(apiVersionsRequest(3))

	// The second request is committed while the first is still held.
	eventually(t, "fast partition committed", func() bool { return len(fast.batches()) == 1 })
	if slow.heldCount() != 1 {
		t.Fatalf("slow partition holds %d proposals, want 1", slow.heldCount())
	}
	slow.release()

	r1 := kmsg.NewPtrProduceResponse()
	r1.Version = 9
	r2 := kmsg.NewPtrProduceResponse()
	r2.Version = 9
	r3 := kmsg.NewPtrApiVersionsResponse()
	r3.Version = 3
	got := []int32{c.read(r1), c.read(r2), c.read(r3)}
	if got[0] != first || got[1] != second || got[2] != third {
		t.Fatalf("correlation ids %v, want [%d %d %d]", got, first, second, third)
	}
	if r1.Topics[0].Topic != "slow" || r2.Topics[0].Topic != "fast" {
		t.Fatalf("responses answer %q then %q", r1.Topics[0].Topic, r2.Topics[0].Topic)
	}
}

// With MaxInFlight 1 a request is not started until the one before it has
// been answered; with more, it is started while the first is pending.
func TestMaxInFlightBoundsStartedRequests(t *testing.T) {
	for _, tc := range []struct {
		maxInFlight  int
		wantReleased bool // the second Produce starts only after the first was committed
	}{
		{maxInFlight: 1, wantReleased: true},
		{maxInFlight: 32, wantReleased: false},
	} {
		h := startServer(t, Config{MaxInFlight: tc.maxInFlight})
		a := h.fb.addTopic("a", 1)[0]
		b := h.fb.addTopic("b", 1)[0]
		a.set(func(p *fakePartition) { p.hold = true })
		sawRelease := make(chan bool, 1)
		b.set(func(p *fakePartition) {
			p.onProduce = func() { sawRelease <- a.heldCount() == 0 && len(a.batches()) == 1 }
		})

		c := h.dial()
		c.send(produceRequest(9, -1, "a", map[int32][]byte{0: makeBatch(1, "a")}))
		c.send(produceRequest(9, -1, "b", map[int32][]byte{0: makeBatch(1, "b")}))
		eventually(t, "first produce held", func() bool { return a.heldCount() == 1 })
		if !tc.wantReleased {
			eventually(t, "second produce started", func() bool { return b.produceCount() == 1 })
		}
		a.release()
		select {
		case got := <-sawRelease:
			if got != tc.wantReleased {
				t.Fatalf("MaxInFlight %d: second produce started after the first committed = %v, want %v",
					tc.maxInFlight, got, tc.wantReleased)
			}
		case <-time.After(failsafe):
			t.Fatalf("MaxInFlight %d: second produce never started", tc.maxInFlight)
		}
		for range 2 {
			r := kmsg.NewPtrProduceResponse()
			r.Version = 9
			c.read(r)
			if r.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("produce error %d", r.Topics[0].Partitions[0].ErrorCode)
			}
		}
	}
}

// Close closes connections with a request in progress and waits for
// every goroutine (goleak in TestMain checks none is left).
func TestCloseStopsConnectionsAndServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb := newFakeBackend("127.0.0.1", 0)
	p := fb.addTopic("t", 1)[0]
	srv, err := New(fb, Config{Logger: logging.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), l) }()

	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &client{t: t, nc: nc, br: bufio.NewReader(nc)}
	before := p.changedCount()
	c.send(fetchRequest(12, "t", time.Hour, 1, 0)) // long poll
	eventually(t, "fetch waiting", func() bool { return p.changedCount() > before })

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve returned %v after Close", err)
	}
	c.requireClosed()
	if err := srv.Serve(context.Background(), mustListen(t)); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Close = %v, want ErrServerClosed", err)
	}
	if err := srv.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
}

// Cancelling Serve's context stops that listener and its connections.
func TestServeStopsWhenContextIsDone(t *testing.T) {
	l := mustListen(t)
	srv, err := New(newFakeBackend("127.0.0.1", 0), Config{Logger: logging.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, l) }()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &client{t: t, nc: nc, br: bufio.NewReader(nc)}
	c.roundTrip(apiVersionsRequest(0))

	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	c.requireClosed()
	if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
		t.Fatal("listener still accepts")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	fb := newFakeBackend("127.0.0.1", 0)
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{MaxRequestBytes: -1}, "MaxRequestBytes"},
		{Config{MaxInFlight: -1}, "MaxInFlight"},
		{Config{RequestTimeout: -time.Second}, "RequestTimeout"},
	} {
		_, err := New(fb, tc.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want a ConfigError for %s", tc.cfg, err, tc.field)
		}
	}
	if _, err := New(nil, Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New(nil backend) = %v, want ErrInvalidConfig", err)
	}
	srv, err := New(fb, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if srv.cfg.MaxRequestBytes != DefaultMaxRequestBytes || srv.cfg.MaxInFlight != DefaultMaxInFlight ||
		srv.cfg.RequestTimeout != DefaultRequestTimeout || srv.log == nil {
		t.Errorf("defaults not applied: %+v", srv.cfg)
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A request that closes the connection does so only after every request
// before it has been answered, as Kafka does: a client that pipelines
// ApiVersions and a request we do not serve still gets the ApiVersions
// answer, and a produce in flight still gets its outcome.
func TestBadRequestClosesAfterEarlierResponses(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	p.set(func(p *fakePartition) { p.hold = true })
	c := h.dial()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("pipeline"))
	bad := kmsg.NewPtrAlterReplicaLogDirsRequest() // not advertised
	bad.Version = 1
	// One write: the server reads all three at once. (kmsg's AppendRequest
	// puts the size at the start of dst, so each frame gets its own.)
	var raw []byte
	raw = append(raw, f.AppendRequest(nil, apiVersionsRequest(0), 1)...)
	raw = append(raw, f.AppendRequest(nil, produceRequest(9, -1, "t", map[int32][]byte{0: makeBatch(1, "a")}), 2)...)
	raw = append(raw, f.AppendRequest(nil, bad, 3)...)
	c.write(raw)

	eventually(t, "produce started", func() bool { return p.heldCount() == 1 })
	av := kmsg.NewPtrApiVersionsResponse()
	if corr := c.read(av); corr != 1 || av.ErrorCode != 0 || !sameKeys(av.ApiKeys, wantAPIs) {
		t.Fatalf("ApiVersions: corr %d error %d keys %+v", corr, av.ErrorCode, av.ApiKeys)
	}
	p.release()
	pr := kmsg.NewPtrProduceResponse()
	pr.Version = 9
	if corr := c.read(pr); corr != 2 || pr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("Produce: corr %d, %+v", corr, pr.Topics[0].Partitions[0])
	}
	// Then EOF, not a reset, and no answer to the bad request.
	if _, _, err := c.readFrame(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the answers: %v, want EOF", err)
	}
	h.requireServing()
}

// A client that keeps sending after its bad request still reads every
// answer before it: the server drains the client's input before closing,
// since closing with unread input would reset the connection.
func TestBadRequestWithUnreadInputStillAnswers(t *testing.T) {
	h := startServer(t, Config{})
	c := h.dial()
	var raw []byte
	for i := int32(1); i <= 3; i++ {
		raw = append(raw, kmsg.NewRequestFormatter().AppendRequest(nil, apiVersionsRequest(0), i)...)
	}
	raw = append(raw, frameWith(math.MaxInt32, make([]byte, 256<<10))...) // too big, then 256 KiB unread
	go c.nc.Write(raw)
	for i := int32(1); i <= 3; i++ {
		resp := kmsg.NewPtrApiVersionsResponse()
		if corr := c.read(resp); corr != i {
			t.Fatalf("corr %d, want %d", corr, i)
		}
	}
	if _, _, err := c.readFrame(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the answers: %v, want EOF", err)
	}
}
