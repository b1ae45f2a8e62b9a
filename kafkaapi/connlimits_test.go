package kafkaapi

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Past MaxConnections a new connection is closed at once; a freed place
// takes the next one. MaxConnectionsPerIP does the same per client IP.
func TestConnectionLimits(t *testing.T) {
	for _, cfg := range []Config{{MaxConnections: 2}, {MaxConnectionsPerIP: 2}} {
		h := startServer(t, cfg)
		a, b := h.dial(), h.dial()
		a.roundTrip(apiVersionsRequest(3))
		b.roundTrip(apiVersionsRequest(3))
		h.dial().requireClosed()
		a.nc.Close()
		eventually(t, "a freed place taken", func() bool {
			c := h.dial()
			c.send(apiVersionsRequest(3))
			_, _, err := c.readFrame()
			c.nc.Close()
			return err == nil
		})
		b.roundTrip(apiVersionsRequest(3)) // the others are untouched
	}
}

// A connection that sends nothing for ConnectionsMaxIdle is closed, unless
// a request of its own is being answered.
func TestIdleConnectionsClose(t *testing.T) {
	const idle = 100 * time.Millisecond
	h := startServer(t, Config{ConnectionsMaxIdle: idle})
	h.dial().requireClosed()

	p := h.fb.addTopic("t", 1)[0]
	p.set(func(p *fakePartition) { p.hold = true })
	c := h.dial()
	corr := c.send(produceRequest(9, -1, "t", map[int32][]byte{0: makeBatch(1, "a")}))
	eventually(t, "produce held", func() bool { return p.heldCount() == 1 })
	time.Sleep(3 * idle) // the request outlives the idle span
	p.release()
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	if got := c.read(resp); got != corr || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("held produce after the idle span: corr %d, %+v", got, resp.Topics)
	}
	c.requireClosed() // idle again, with nothing in flight
}
