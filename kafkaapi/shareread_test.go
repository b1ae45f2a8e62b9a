package kafkaapi

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// A ShareFetch reads at most shareReadBytes (and whole batches) of a
// partition's backlog however large the request's MaxBytes, so a fetch
// does not copy the whole backlog to acquire part of it; the next fetch
// goes on where it stopped.
func TestShareFetchReadIsBounded(t *testing.T) {
	h, id := startShareServer(t, func(acl.Request) bool { return false })
	h.fb.mu.Lock()
	p1 := h.fb.topics["s"].partitions[1]
	h.fb.mu.Unlock()
	big := strings.Repeat("v", 64<<10)
	for i := range 8 { // 8 batches of 4 records, 256 KiB each: 2 MiB
		if _, err := p1.Produce(makeBatch(int64(i), big, big, big, big))(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	c := h.dial()
	fetch := func(epoch int32) (n int, size int) {
		req := shareFetchReq("m", epoch, id, nil)
		req.MaxRecords, req.MaxBytes = 1000, 50<<20
		resp := c.roundTrip(req).(*kmsg.ShareFetchResponse)
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if p.Partition != 1 {
					continue
				}
				for _, r := range p.AcquiredRecords {
					n += int(r.LastOffset - r.FirstOffset + 1)
				}
				size += len(p.Records)
			}
		}
		return n, size
	}
	n, size := fetch(0)
	if n == 0 || n >= 32 || size > shareReadBytes {
		t.Fatalf("first fetch: %d of 32 records acquired in %d bytes, want some within %d", n, size, shareReadBytes)
	}
	total := n
	for epoch := int32(1); total < 32 && epoch < 10; epoch++ {
		n, _ = fetch(epoch)
		total += n
	}
	if total != 32 {
		t.Fatalf("%d of 32 records acquired over the fetches", total)
	}
}

// A ShareFetch's piggy-backed acknowledgements of a partition and its
// acquisition from that partition are committed in one snapshot write.
func TestShareFetchAcksAndAcquireShareACommit(t *testing.T) {
	h, id := startShareServer(t, func(acl.Request) bool { return false })
	sb := h.srv.backend.(*shareBackend)
	writes := func() int {
		sb.store.mu.Lock()
		defer sb.store.mu.Unlock()
		return sb.store.writes
	}
	c := h.dial()
	fetch := func(req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
		return c.roundTrip(req).(*kmsg.ShareFetchResponse)
	}
	if n, _, _ := acquired(fetch(shareFetchReq("m", 0, id, nil))); n != 3 {
		t.Fatalf("first fetch: %d records, want 3", n)
	}
	h.fb.mu.Lock()
	p0 := h.fb.topics["s"].partitions[0]
	h.fb.mu.Unlock()
	if _, err := p0.Produce(makeBatch(4, "d", "e"))(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := writes()
	n, count, code := acquired(fetch(shareFetchReq("m", 1, id, map[int32][]int8{0: {1, 1, 1}})))
	if n != 2 || count != 1 || code != 0 {
		t.Fatalf("accept and fetch: %d records (count %d), ack %d; want 2, 1, 0", n, count, code)
	}
	if w := writes() - before; w != 1 {
		t.Fatalf("%d snapshot writes for the acknowledgements and the acquisition, want 1", w)
	}
	// A renew (type 4) outside a renewing request is refused, and
	// nothing is applied.
	n, _, code = acquired(fetch(shareFetchReq("m", 2, id, map[int32][]int8{0: {4, 4, 4, 4, 4}})))
	if n != 0 || code != kerr.InvalidRequest.Code {
		t.Fatalf("renew in a fetch: %d records, ack %d", n, code)
	}
}
