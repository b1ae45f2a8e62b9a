package kafkaapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// A member's share session ends when a partition it acquired from is
// loaded again (here the leadership went elsewhere and came back, a new
// leader epoch; a failed state write does the same): the records it held
// are available again, and were the session to go on, the member would
// acquire them again and its acknowledgement of the first delivery would
// settle the second (franz-go drops the acknowledgements of an ended
// session instead).
func TestShareSessionEndsWhenItsPartitionReloads(t *testing.T) {
	h, id := startShareServer(t, func(acl.Request) bool { return false })
	c := h.dial()
	fetch := func(req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
		return c.roundTrip(req).(*kmsg.ShareFetchResponse)
	}
	if n, count, _ := acquired(fetch(shareFetchReq("m", 0, id, nil))); n != 3 || count != 1 {
		t.Fatalf("first fetch: %d records, count %d", n, count)
	}
	h.fb.mu.Lock()
	p0 := h.fb.topics["s"].partitions[0]
	h.fb.mu.Unlock()
	p0.mu.Lock()
	p0.epoch++
	p0.mu.Unlock()

	resp := fetch(shareFetchReq("m", 1, id, nil))
	if n, count, _ := acquired(resp); resp.ErrorCode != kerr.ShareSessionNotFound.Code || n != 0 {
		t.Fatalf("fetch after the reload: error %d, %d records (count %d); want SHARE_SESSION_NOT_FOUND and none", resp.ErrorCode, n, count)
	}
	if resp := fetch(shareFetchReq("m", 2, id, map[int32][]int8{0: {1, 1, 1}})); resp.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("the ended session's acknowledgement: error %d, want SHARE_SESSION_NOT_FOUND", resp.ErrorCode)
	}
	if n, count, _ := acquired(fetch(shareFetchReq("m", 0, id, nil))); n != 3 || count != 2 {
		t.Fatalf("a new session: %d records, count %d; want the 3 again, counted twice", n, count)
	}
	resp = fetch(shareFetchReq("m", 1, id, map[int32][]int8{0: {1, 1, 1}}))
	if n, _, code := acquired(resp); resp.ErrorCode != 0 || code != 0 || n != 0 {
		t.Fatalf("accepting the second delivery: error %d, ack %d, %d records", resp.ErrorCode, code, n)
	}
	// The session goes on while the partition stays loaded.
	if resp := fetch(shareFetchReq("m", 2, id, nil)); resp.ErrorCode != 0 {
		t.Fatalf("a later fetch: error %d", resp.ErrorCode)
	}
}
