package kafkaapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A taker of a half waits while the half lacks room; a smaller taker
// that fits passes it, and the peak records the most held at once.
func TestBudgetHalves(t *testing.T) {
	b := newBudget(200)
	ctx := context.Background()
	if err := b.takeFrame(ctx, 80); err != nil {
		t.Fatal(err)
	}
	bigDone := make(chan error)
	go func() { bigDone <- b.takeFrame(ctx, 50) }() // 130 > 100: waits
	eventually(t, "the big taker waiting", func() bool { return b.waiting.Load() == 1 })
	if err := b.takeFrame(ctx, 10); err != nil { // fits: passes the big one
		t.Fatal(err)
	}
	if err := b.takeCost(ctx, 100); err != nil { // the other half is free
		t.Fatal(err)
	}
	select {
	case <-bigDone:
		t.Fatal("the big taker got room that was not there")
	default:
	}
	b.release(charge{frame: 80})
	if err := <-bigDone; err != nil {
		t.Fatal(err)
	}
	if used, peak := b.used.Load(), b.peak.Load(); used != 160 || peak != 190 {
		t.Fatalf("used %d, peak %d; want 160 and 190", used, peak)
	}
	b.release(charge{frame: 60, cost: 100})
	if b.used.Load() != 0 || b.frames.free != 100 || b.costs.free != 100 {
		t.Fatalf("used %d, free %d and %d after releasing everything", b.used.Load(), b.frames.free, b.costs.free)
	}
}

// A taker whose context ends stops waiting and holds nothing.
func TestBudgetTakeCancelled(t *testing.T) {
	b := newBudget(100)
	if err := b.takeCost(context.Background(), 50); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := b.takeCost(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("take on a spent half: %v", err)
	}
	if b.used.Load() != 50 || b.waiting.Load() != 0 || b.costs.waiters.Len() != 0 {
		t.Fatalf("used %d, waiting %d after a cancelled take", b.used.Load(), b.waiting.Load())
	}
}

// New wants a budget of at least two of the largest frames, one per half.
func TestQueuedMaxRequestBytesConfig(t *testing.T) {
	fb := newFakeBackend("127.0.0.1", 0)
	_, err := New(fb, Config{MaxRequestBytes: 1 << 20, QueuedMaxRequestBytes: 2<<20 - 1})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "QueuedMaxRequestBytes" {
		t.Fatalf("a budget under twice MaxRequestBytes: %v", err)
	}
	srv, err := New(fb, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests().QueuedBytesMax; got != DefaultQueuedMaxRequestBytes {
		t.Fatalf("default budget %d", got)
	}
}

// A request whose cost alone passes the budget's half for costs closes its
// connection (after answering the requests before it); the server goes on.
func TestRequestCostingMoreThanBudgetClosesConnection(t *testing.T) {
	const budget = 256 << 10 // 128 KiB for costs: non-scanned frames up to 1 KiB
	h := startServer(t, Config{MaxRequestBytes: 64 << 10, QueuedMaxRequestBytes: budget})
	c := h.dial()
	c.send(apiVersionsRequest(3))
	req := kmsg.NewPtrDescribeConfigsRequest()
	for range 200 {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "some-topic-name"
		req.Resources = append(req.Resources, r)
	}
	c.send(req)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	c.read(resp)
	if resp.ErrorCode != 0 {
		t.Fatalf("the request before: error %d", resp.ErrorCode)
	}
	c.requireClosed()
	if st := h.srv.Requests(); st.QueuedBytes != 0 {
		t.Fatalf("%d bytes left charged", st.QueuedBytes)
	}
	h.requireServing()
}

// Requests abandoned when their connection closes give their charges
// back.
func TestAbandonedRequestsReleaseTheirCharges(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	p.set(func(p *fakePartition) { p.hold = true })
	c := h.dial()
	for range 3 {
		c.send(produceRequest(9, -1, "t", map[int32][]byte{0: makeBatch(1, "v")}))
	}
	eventually(t, "three produces held", func() bool { return p.heldCount() == 3 })
	if st := h.srv.Requests(); st.QueuedBytes == 0 {
		t.Fatal("held requests charge nothing")
	}
	c.nc.Close()
	eventually(t, "charges released", func() bool { return h.srv.Requests().QueuedBytes == 0 })
}

// A client that announces a large frame and stalls holds its charge only
// until the frame's read deadline, RequestTimeout and a second per MiB.
func TestStalledFrameReleasesItsCharge(t *testing.T) {
	h := startServer(t, Config{RequestTimeout: 100 * time.Millisecond})
	c := h.dial()
	c.write([]byte{0, 0x10, 0, 0, 0, 0}) // a 1 MiB frame, two bytes of it
	eventually(t, "the frame charged", func() bool { return h.srv.Requests().QueuedBytes == 1<<20 })
	c.requireClosed()
	eventually(t, "the charge released", func() bool { return h.srv.Requests().QueuedBytes == 0 })
}
