package kafkaapi

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/sharepart"
)

// heldShareStates is a share coordinator that answers at once, except
// for the group "held", whose reads and writes it holds until release
// closes.
type heldShareStates struct {
	*fakeBackend
	release  chan struct{}
	mu       sync.Mutex // guards served
	served   []string   // "read g" or "write g", in the order served
	snapshot sharepart.Snapshot
}

func (b *heldShareStates) hold(ctx context.Context, op, group string) {
	if group == "held" {
		select {
		case <-b.release:
		case <-ctx.Done():
		}
	}
	b.mu.Lock()
	b.served = append(b.served, op+" "+group)
	b.mu.Unlock()
}

func (b *heldShareStates) ShareStateRead(ctx context.Context, key sharepart.Key, _ int32) (sharepart.Snapshot, bool, error) {
	b.hold(ctx, "read", key.Group)
	return b.snapshot, true, nil
}

func (b *heldShareStates) ShareStateWrite(ctx context.Context, key sharepart.Key, _ sharepart.Snapshot) error {
	b.hold(ctx, "write", key.Group)
	return nil
}

func (b *heldShareStates) hasServed(ops ...string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, op := range ops {
		if !slices.Contains(b.served, op) {
			return false
		}
	}
	return true
}

func readShareStateRequest(group string) *kmsg.ReadShareGroupStateRequest {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = [16]byte{1}
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func writeShareStateRequest(group string) *kmsg.WriteShareGroupStateRequest {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = [16]byte{1}
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.StartOffset = 5
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// Data partitions' leaders send their share-state reads and writes to a
// share coordinator's node on one connection, and each write waits for a
// Raft commit. One held at its coordinator (loading, or a slow commit)
// must not hold the requests behind it, of other share partitions: they
// are served meanwhile, and the answers still come in order.
func TestShareStateRequestsDoNotWaitForOneHeld(t *testing.T) {
	st := &heldShareStates{release: make(chan struct{}), snapshot: sharepart.Snapshot{StateEpoch: 3, StartOffset: 7}}
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend { st.fakeBackend = fb; return st })
	var once sync.Once
	release := func() { once.Do(func() { close(st.release) }) }
	t.Cleanup(release)
	c := h.dial()
	first := c.send(writeShareStateRequest("held"))
	second := c.send(readShareStateRequest("other"))
	third := c.send(writeShareStateRequest("other"))
	eventually(t, "the read and write behind the held write to be served while it is held",
		func() bool { return st.hasServed("read other", "write other") })
	if st.hasServed("write held") {
		t.Fatal("the held write was served before its release")
	}
	release()

	w := kmsg.NewPtrWriteShareGroupStateResponse()
	if got := c.read(w); got != first || w.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("first answer: correlation id %d (want %d), error %d", got, first, w.Topics[0].Partitions[0].ErrorCode)
	}
	r := kmsg.NewPtrReadShareGroupStateResponse()
	if got := c.read(r); got != second {
		t.Fatalf("second answer: correlation id %d, want %d (answers out of order)", got, second)
	}
	if p := r.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.StateEpoch != 3 || p.StartOffset != 7 {
		t.Fatalf("read answer %+v, want state epoch 3 and start offset 7", p)
	}
	w = kmsg.NewPtrWriteShareGroupStateResponse()
	if got := c.read(w); got != third || w.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("third answer: correlation id %d (want %d), error %d", got, third, w.Topics[0].Partitions[0].ErrorCode)
	}
}
