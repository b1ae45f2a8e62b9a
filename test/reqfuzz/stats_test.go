package reqfuzz

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/kafkaapi"
)

// A node that closes a connection while every request it has not
// answered is one it admits (well-formed, at an advertised version,
// within its cost bound) breaks the protocol; a close after a request
// over the cost bound, or after a mutated one, does not.
func TestClosesClassified(t *testing.T) {
	clean := func(key kmsg.Key) *request { return &request{key: int16(key), inRange: true} }
	over := clean(kmsg.CreateTopics)
	over.overCost = true
	mutated := clean(kmsg.FindCoordinator)
	mutated.mutated = true
	for _, tc := range []struct {
		name      string
		frames    []*request
		violation bool
		overCost  int
	}{
		{"admitted", []*request{clean(kmsg.Metadata), clean(kmsg.FindCoordinator)}, true, 0},
		{"over the cost bound", []*request{clean(kmsg.Metadata), over, clean(kmsg.FindCoordinator)}, false, 1},
		{"mutated", []*request{clean(kmsg.Metadata), mutated}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStats()
			// The first request was answered, the rest not, when the node closed.
			o := &outcome{node: 1, frames: tc.frames, segs: []segment{{next: 1, sent: len(tc.frames), serverClosed: true}}}
			vs := s.outcome(o)
			if got := len(vs) > 0; got != tc.violation {
				t.Errorf("violations %v, want one: %v", vs, tc.violation)
			}
			if got := s.closedOverCost[int16(kmsg.CreateTopics)]; got != tc.overCost {
				t.Errorf("closes over the cost bound %d, want %d", got, tc.overCost)
			}
		})
	}
}

// markOverCost marks a clean request whose decoding would cost a node
// more than it admits, and leaves a small one and a mutated one.
func TestMarkOverCost(t *testing.T) {
	limit := kafkaapi.MaxRequestCost(kafkaapi.DefaultQueuedMaxRequestBytes)
	frame := func(keys int) *request {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(4)
		for i := range keys {
			req.CoordinatorKeys = append(req.CoordinatorKeys, "group-"+string(rune('a'+i%26)))
		}
		return &request{key: int16(kmsg.FindCoordinator), version: 4, inRange: true,
			b: kmsg.NewRequestFormatter(kmsg.FormatterClientID("t")).AppendRequest(nil, req, 1)}
	}
	small, big, bigMutated := frame(10), frame(200_000), frame(200_000)
	bigMutated.mutated = true
	markOverCost([]*request{small, big, bigMutated}, limit)
	if small.overCost || !big.overCost || bigMutated.overCost {
		t.Errorf("over the cost bound: small %v, big %v (%d bytes), big mutated %v; want false, true, false",
			small.overCost, big.overCost, len(big.b), bigMutated.overCost)
	}
}

// Requests unanswered on an open connection at a round's end are
// counted, and the oldest, which holds the rest, per API.
func TestUnansweredCounted(t *testing.T) {
	s := NewStats()
	frames := []*request{{key: int16(kmsg.Metadata)}, {key: int16(kmsg.Fetch)}, {key: int16(kmsg.Metadata)}}
	s.outcome(&outcome{node: 1, frames: frames, segs: []segment{{next: 1, sent: 3}}})
	if s.lingering != 2 || s.lingerHead.n[int16(kmsg.Fetch)] != 1 || s.lingerHead.n[int16(kmsg.Metadata)] != 0 {
		t.Errorf("unanswered %d, oldest per API %v; want 2 and only Fetch once", s.lingering, s.lingerHead.n)
	}
	if ex := s.Examples()["unanswered-Fetch"]; ex == nil || len(ex.Conns) != 1 {
		t.Errorf("no example case for the unanswered Fetch: %v", ex)
	}
}
