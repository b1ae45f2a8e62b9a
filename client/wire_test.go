package client

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceRequestOf is a produce request carrying one batch of n bytes.
func produceRequestOf(n int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.SetVersion(9)
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "events"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = bytes.Repeat([]byte{7}, n)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// Frames appended one after another, whether built in place or not, are
// each what AppendRequest makes of its request alone, size prefix first.
func TestAppendFrameKeepsEachFrameWhole(t *testing.T) {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c"))
	reqs := []kmsg.Request{produceRequestOf(100), produceRequestOf(5000), produceRequestOf(1)}
	var want []byte
	for i, r := range reqs {
		want = append(want, f.AppendRequest(nil, r, int32(i+1))...)
	}
	for _, room := range []int{0, 64, len(want)} {
		buf := make([]byte, 0, room)
		for i, r := range reqs {
			buf = appendFrame(buf, f, r, int32(i+1))
		}
		if !bytes.Equal(buf, want) {
			t.Fatalf("room %d: frames differ from each request's own encoding", room)
		}
	}
}

// With room in the buffer, appending frames allocates nothing (the copy
// saved is shown by BenchmarkProduce's B/op, not here).
func TestAppendFrameBuildsInPlace(t *testing.T) {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c"))
	req := produceRequestOf(1 << 20)
	buf := make([]byte, 0, 3<<20)
	if n := testing.AllocsPerRun(5, func() { buf = appendFrame(appendFrame(buf[:0], f, req, 1), f, req, 2) }); n != 0 {
		t.Fatalf("%v allocations per two frames with room for them", n)
	}
}

// A batch's encoding goes back to the pool only once the batch is done
// and no request carries it; otherwise it is kept.
func TestRecycleWireOnlyWhenDoneAndBack(t *testing.T) {
	p := &Producer{}
	for _, c := range []struct {
		done, inflight, recycled bool
	}{{true, false, true}, {true, true, false}, {false, false, false}, {false, true, false}} {
		b := &batch{done: c.done, inflight: c.inflight, wire: make([]byte, 10)}
		p.recycleWireLocked(b)
		if got := b.wire == nil; got != c.recycled {
			t.Errorf("done %v, in flight %v: recycled %v, want %v", c.done, c.inflight, got, c.recycled)
		}
	}
}
