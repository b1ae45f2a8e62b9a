package groupcoord

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkConsumerHeartbeat is a steady heartbeat of one member of a
// stable 100-member consumer group: nothing to write, the group read from
// the View and checked.
func BenchmarkConsumerHeartbeat(b *testing.B) {
	h, _ := newConsumerHarness(b, time.Minute)
	for i := range 100 {
		h.cgHeartbeat(hb("g", fmt.Sprint("m", i), 0, []string{"t", "u"}, nil))
	}
	g, _ := h.view.ConsumerGroup("g")
	m := g.Members["m0"]
	req := hb("g", "m0", m.Epoch, nil, nil)
	b.ReportAllocs()
	for b.Loop() {
		if r := h.cgHeartbeat(req); r.ErrorCode != 0 {
			b.Fatal(errName(r.ErrorCode))
		}
	}
}

// BenchmarkShareHeartbeat is a steady heartbeat of one member of a
// stable 100-member share group: nothing to write.
func BenchmarkShareHeartbeat(b *testing.B) {
	h, _ := newShareHarness(b, time.Minute, 1000)
	for i := range 100 {
		h.shareHB(shb("g", fmt.Sprint("m", i), 0, "t", "u"))
	}
	epoch, _ := h.view.ShareMember("g", "m0")
	h.shareHB(shb("g", "m0", epoch))
	epoch, _ = h.view.ShareMember("g", "m0")
	req := shb("g", "m0", epoch)
	b.ReportAllocs()
	for b.Loop() {
		if r := h.shareHB(req); r.ErrorCode != 0 {
			b.Fatal(errName(r.ErrorCode))
		}
	}
}
