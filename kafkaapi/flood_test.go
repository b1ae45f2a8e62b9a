package kafkaapi

import (
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// floodConns is how many connections TestFloodOfMaximalFrames opens:
// 200, or MINIKAFKA_FLOOD_CONNS (1000 is worth a run by hand).
func floodConns(t *testing.T) int {
	t.Helper()
	v := os.Getenv("MINIKAFKA_FLOOD_CONNS")
	if v == "" {
		return 200
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("MINIKAFKA_FLOOD_CONNS=%q", v)
	}
	return n
}

// floodFrame is a Produce frame (with its size prefix) of nearly max
// bytes: one batch.
func floodFrame(t *testing.T, max int) []byte {
	t.Helper()
	req := produceRequest(9, -1, "t", map[int32][]byte{0: makeBatch(1, string(make([]byte, max-200)))})
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("flood")).AppendRequest(nil, req, 1)
	if n := len(f) - 4; n > max || n < max-1000 {
		t.Fatalf("frame of %d bytes, want nearly %d", n, max)
	}
	return f
}

// Connections that all send a maximal frame at once are read as the
// budget of queued request bytes allows, never past it: the others wait
// (their produces are held, so every admitted frame stays charged), and
// all are answered once the partition commits. The server then serves as
// before, with nothing left charged.
func TestFloodOfMaximalFrames(t *testing.T) {
	const maxRequest, budget = 1 << 20, 4 << 20
	n := floodConns(t)
	h := startServer(t, Config{MaxRequestBytes: maxRequest, QueuedMaxRequestBytes: budget})
	p := h.fb.addTopic("t", 1)[0]
	p.set(func(p *fakePartition) { p.hold = true })
	frame := floodFrame(t, maxRequest)

	var wg sync.WaitGroup
	errs := make(chan string, n)
	for range n {
		c := h.dial()
		wg.Go(func() {
			if _, err := c.nc.Write(frame); err != nil {
				errs <- "write: " + err.Error()
				return
			}
			resp := kmsg.NewPtrProduceResponse()
			resp.Version = 9
			if _, body, err := c.readFrame(); err != nil {
				errs <- "read: " + err.Error()
			} else if err := resp.ReadFrom(body[1:]); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				errs <- "bad response"
			}
		})
	}
	// Every connection's produce is held or waits for room.
	eventually(t, "every produce held or waiting", func() bool {
		return p.heldCount()+h.srv.Requests().QueuedWaiting == n
	})
	st := h.srv.Requests()
	t.Logf("%d connections: %d produces held, %d waiting; %d of %d bytes queued", n, p.heldCount(), st.QueuedWaiting, st.QueuedBytes, st.QueuedBytesMax)
	// Frames get half the budget.
	if held := p.heldCount(); held < 1 || held > budget/2/maxRequest {
		t.Fatalf("%d produces of ~1 MiB held at once under a %d-byte budget", held, budget)
	}
	p.release()
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	eventually(t, "nothing left charged", func() bool { return h.srv.Requests().QueuedBytes == 0 })
	if st := h.srv.Requests(); st.QueuedBytesPeak > budget || st.QueuedBytesPeak < maxRequest {
		t.Fatalf("peak of queued bytes %d, want at most the budget %d (and at least a frame)", st.QueuedBytesPeak, budget)
	}
	if got := p.produceCount(); got != n {
		t.Fatalf("%d produces reached the partition, want %d", got, n)
	}
	h.requireServing()
}
