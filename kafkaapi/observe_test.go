package kafkaapi

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Connections counts open, accepted and refused connections.
func TestConnectionStats(t *testing.T) {
	h := startServer(t, Config{MaxConnections: 2})
	a, b := h.dial(), h.dial()
	a.roundTrip(apiVersionsRequest(3))
	b.roundTrip(apiVersionsRequest(3))
	h.dial().requireClosed()
	if got := h.srv.Connections(); got != (ConnStats{Open: 2, Accepted: 2, Refused: 1}) {
		t.Fatalf("with 2 served and 1 refused: %+v", got)
	}
	a.nc.Close()
	eventually(t, "a closed connection uncounted", func() bool { return h.srv.Connections().Open == 1 })
}

// observations records what a RequestObserver is told.
type observations struct {
	mu   sync.Mutex // guards keys
	keys []int16
}

func (o *observations) RequestDone(key int16, elapsed time.Duration) {
	if elapsed <= 0 {
		panic("a request took no time")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.keys = append(o.keys, key)
}

// The observer is told of each request once it is answered, with its API
// key, also of a Produce with acks=0, which has no response.
func TestRequestObserver(t *testing.T) {
	obs := &observations{}
	h := startServer(t, Config{Observer: obs})
	h.fb.addTopic("t", 1)
	c := h.dial()
	c.roundTrip(apiVersionsRequest(3))
	c.send(produceRequest(9, 0, "t", map[int32][]byte{0: makeBatch(1, "a")}))
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	c.roundTrip(req)
	eventually(t, "three requests observed", func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return len(obs.keys) == 3
	})
	want := []int16{int16(kmsg.ApiVersions), int16(kmsg.Produce), int16(kmsg.Metadata)}
	for i, k := range want {
		if obs.keys[i] != k {
			t.Fatalf("observed keys %v, want %v", obs.keys, want)
		}
	}
}
