package kafkaapi

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func listOffsetsRequest(version int16, topic string, epoch int32, timestamps ...int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = version
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, ts := range timestamps {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = 0
		rp.Timestamp = ts
		rp.CurrentLeaderEpoch = epoch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func TestListOffsets(t *testing.T) {
	for _, version := range []int16{1, 4, 7, 8, 11} {
		h := startServer(t, Config{})
		h.fb.set(func(b *fakeBackend) { b.maxTS = true })
		p := h.fb.addTopic("t", 1)[0]
		p.append(makeBatch(100, "a", "b")) // offsets 0-1, timestamps 100-101
		p.append(makeBatch(300, "c"))      // offset 2, timestamp 300
		p.append(makeBatch(200, "d"))      // offset 3, timestamp 200
		p.set(func(p *fakePartition) { p.start = 1 })

		p.set(func(p *fakePartition) { p.epoch = 6 })
		want := []struct {
			ts, offset, found int64
			epoch             int32
			minVersion        int16 // below it, UNSUPPORTED_VERSION
		}{
			{-2, 1, -1, 5, 1},    // earliest: the log start offset, with the first batch's epoch
			{-1, 4, -1, 6, 1},    // latest: the high watermark, with the current epoch
			{100, 1, 101, 5, 1},  // the first record at or after 100 and the log start
			{101, 1, 101, 5, 1},  // the first record at or after 101, inside its batch
			{150, 2, 300, 5, 1},  // first record at or after 150
			{999, -1, -1, -1, 1}, // none
			{-3, 2, 300, 5, 7},   // max timestamp
			{-4, 1, -1, 5, 8},    // earliest local: the log start, as earliest
			{-5, -1, -1, -1, 9},  // latest tiered: nothing is tiered
			{-6, -1, -1, -1, 11}, // earliest pending upload: nothing is
			{-7, -1, -1, -1, 99}, // no such special timestamp
		}
		c := h.dial()
		for i, w := range want {
			got := c.roundTrip(listOffsetsRequest(version, "t", 6, w.ts)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
			if version < w.minVersion {
				if got.ErrorCode != kerr.UnsupportedVersion.Code || got.Offset != -1 {
					t.Errorf("v%d timestamp %d: %+v, want UNSUPPORTED_VERSION", version, w.ts, got)
				}
				continue
			}
			if got.ErrorCode != 0 || got.Offset != w.offset || got.Timestamp != w.found {
				t.Errorf("v%d answer %d: error %d offset %d ts %d, want offset %d ts %d", version, i, got.ErrorCode, got.Offset, got.Timestamp, w.offset, w.found)
			}
			wantEpoch := w.epoch
			if version < 4 {
				wantEpoch = -1 // not on the wire before v4
			}
			if got.LeaderEpoch != wantEpoch {
				t.Errorf("v%d answer %d: leader epoch %d, want %d", version, i, got.LeaderEpoch, wantEpoch)
			}
		}
	}
}

// Without the MaxTimestampReader capability, -3 answers "none".
func TestListOffsetsMaxTimestampUnsupported(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)[0].append(makeBatch(100, "a"))
	got := h.dial().roundTrip(listOffsetsRequest(7, "t", -1, -3)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.Offset != -1 || got.Timestamp != -1 {
		t.Fatalf("%+v", got)
	}
}

func TestListOffsetsErrors(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	c := h.dial()
	for _, tc := range []struct {
		topic string
		epoch int32
		want  *kerr.Error
	}{
		{"nope", -1, kerr.UnknownTopicOrPartition},
		{"t", 6, kerr.UnknownLeaderEpoch},
		{"t", 4, kerr.FencedLeaderEpoch},
	} {
		got := c.roundTrip(listOffsetsRequest(7, tc.topic, tc.epoch, -1)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if got.ErrorCode != tc.want.Code || got.Offset != -1 {
			t.Errorf("%s epoch %d: error %d offset %d, want %s", tc.topic, tc.epoch, got.ErrorCode, got.Offset, tc.want.Message)
		}
	}
	p.set(func(p *fakePartition) { p.leader = false })
	got := c.roundTrip(listOffsetsRequest(7, "t", -1, -1)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("follower: error %d, want NOT_LEADER_OR_FOLLOWER", got.ErrorCode)
	}
}

// v0 (before KIP-79) answers a list holding the one offset v1 would give;
// with no batch at or after the timestamp, the high watermark.
func TestListOffsetsV0(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0]
	p.append(makeBatch(100, "a", "b")) // offsets 0-1, timestamps 100-101
	p.append(makeBatch(300, "c"))      // offset 2
	p.set(func(p *fakePartition) { p.start = 1 })
	req := listOffsetsRequest(0, "t", -1, -2, -1, 150, 999, -1)
	for i := range req.Topics[0].Partitions {
		req.Topics[0].Partitions[i].MaxNumOffsets = 1
	}
	req.Topics[0].Partitions[4].MaxNumOffsets = 0
	c := h.dial()
	resp := c.roundTrip(req).(*kmsg.ListOffsetsResponse)
	want := [][]int64{{1}, {3}, {2}, {3}, {}}
	for i, w := range want {
		got := resp.Topics[0].Partitions[i]
		if got.ErrorCode != 0 || !slices.Equal(got.OldStyleOffsets, w) {
			t.Errorf("answer %d: error %d offsets %v, want %v", i, got.ErrorCode, got.OldStyleOffsets, w)
		}
	}
	bad := c.roundTrip(listOffsetsRequest(0, "nope", -1, -1)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if bad.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(bad.OldStyleOffsets) != 0 {
		t.Errorf("unknown topic: %+v", bad)
	}
}

// A v1+ ListOffsets that names a partition twice answers INVALID_REQUEST
// for every entry of it, as Kafka does; the other partitions are answered.
func TestListOffsetsDuplicatePartition(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 2)[1].append(makeBatch(100, "a"))
	req := listOffsetsRequest(11, "t", -1, -1, -2)
	other := kmsg.NewListOffsetsRequestTopicPartition()
	other.Partition, other.Timestamp = 1, -1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, other)
	resp := h.dial().roundTrip(req).(*kmsg.ListOffsetsResponse)
	ps := resp.Topics[0].Partitions
	if len(ps) != 3 || ps[0].ErrorCode != kerr.InvalidRequest.Code || ps[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%+v", ps)
	}
	if ps[2].ErrorCode != 0 || ps[2].Offset != 1 {
		t.Fatalf("partition 1: %+v", ps[2])
	}
}
