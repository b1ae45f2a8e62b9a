package kafkaapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/sharepart"
)

// TestShareLagFormula: Kafka's lag is the high watermark less the start
// offset less the Acknowledged and Archived records at or past it;
// Available ones (released, or Acquired as persisted) still count.
func TestShareLagFormula(t *testing.T) {
	b := func(first, last int64, st sharepart.RecordState) sharepart.Batch {
		return sharepart.Batch{First: first, Last: last, State: st, DeliveryCount: 1}
	}
	for _, c := range []struct {
		name string
		hw   int64
		s    sharepart.Snapshot
		want int64
	}{
		{"nothing fetched", 10, sharepart.Snapshot{StartOffset: 4}, 6},
		{"caught up", 10, sharepart.Snapshot{StartOffset: 10}, 0},
		{"in-flight only", 10, sharepart.Snapshot{StartOffset: 2, Batches: []sharepart.Batch{b(2, 5, sharepart.Available)}}, 8},
		{"terminal records in the window", 12, sharepart.Snapshot{StartOffset: 2, Batches: []sharepart.Batch{
			b(2, 3, sharepart.Available), b(4, 5, sharepart.Acknowledged), b(6, 6, sharepart.Archived),
			b(7, 8, sharepart.Available), b(9, 9, sharepart.Acknowledged),
		}}, 12 - 2 - 4},
		{"a batch reaching below the start", 12, sharepart.Snapshot{StartOffset: 5, Batches: []sharepart.Batch{
			b(3, 6, sharepart.Acknowledged), b(7, 7, sharepart.Available), b(8, 8, sharepart.Archived),
		}}, 12 - 5 - 3},
	} {
		if got := shareLag(c.hw, c.s); got != c.want {
			t.Errorf("%s: lag %d, want %d", c.name, got, c.want)
		}
	}
}

// TestDescribeShareGroupOffsetsLag: v1 answers the lag from the data
// partition's high watermark and the persisted state (a released record
// still lags, accepted ones past the start offset do not); a partition
// with no state has lag -1, and one whose high watermark cannot be read
// answers that error.
func TestDescribeShareGroupOffsetsLag(t *testing.T) {
	h, id := startShareServer(t, func(acl.Request) bool { return false })
	c := h.dial()
	c.roundTrip(shareFetchReq("m", 0, id, nil)) // acquires offsets 0-2 of partition 0
	// Release 0, accept 1 and 2: the start stays at 0 with two records done.
	if n, _, code := acquired(c.roundTrip(shareFetchReq("m", 1, id, map[int32][]int8{0: {2, 1, 1}})).(*kmsg.ShareFetchResponse)); code != 0 {
		t.Fatalf("ack: code %d (%d acquired)", code, n)
	}
	describe := func(group string) []kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Version = 1
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = group
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = "s", []int32{0, 1}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		return c.roundTrip(req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].Topics[0].Partitions
	}
	ps := describe("g")
	// Offset 0 may have been handed out again by the second fetch: either
	// way it is not done, so the lag of partition 0 is 3 - 0 - 2.
	if ps[0].ErrorCode != 0 || ps[0].StartOffset != 0 || ps[0].Lag != 1 {
		t.Fatalf("partition 0: %+v, want start 0 lag 1", ps[0])
	}
	if ps[1].ErrorCode != 0 || ps[1].StartOffset != 0 || ps[1].Lag != 0 {
		t.Fatalf("partition 1 (empty): %+v, want start 0 lag 0", ps[1])
	}
	if ps := describe("other"); ps[0].StartOffset != -1 || ps[0].Lag != -1 || ps[1].Lag != -1 {
		t.Fatalf("no state: %+v, want lag -1", ps)
	}

	h.fb.mu.Lock()
	p1 := h.fb.topics["s"].partitions[1]
	h.fb.mu.Unlock()
	p1.mu.Lock()
	p1.leader = false
	p1.mu.Unlock()
	ps = describe("g")
	if ps[1].ErrorCode != kerr.NotLeaderForPartition.Code || ps[1].Lag != -1 || ps[0].Lag != 1 {
		t.Fatalf("high watermark unknown: %+v, want NOT_LEADER_OR_FOLLOWER with lag -1 for partition 1 only", ps)
	}
}
