package kafkaapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func offsetForLeaderEpochRequest(version int16, topic string, current int32, epochs ...int32) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = version
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	for _, e := range epochs {
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch = current
		rp.LeaderEpoch = e
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// epochLog fills a partition with batches of epochs 2 (offsets 0-2), 4
// (3-4) and 7 (5), and makes 9 the current epoch.
func epochLog(p *fakePartition) {
	for _, b := range []struct {
		epoch int32
		recs  []string
	}{{2, []string{"a", "b"}}, {2, []string{"c"}}, {4, []string{"d", "e"}}, {7, []string{"f"}}} {
		p.set(func(p *fakePartition) { p.epoch = b.epoch })
		p.append(makeBatch(1, b.recs...))
	}
	p.set(func(p *fakePartition) { p.epoch = 9 })
}

// Kafka's answers (LeaderEpochFileCache.endOffsetFor), with and without
// the backend's epoch index, in every version.
func TestOffsetForLeaderEpoch(t *testing.T) {
	epochs := []int32{9, 10, -1, 1, 2, 3, 4, 6, 7, 8}
	want := []struct {
		epoch int32
		end   int64
	}{
		{9, 6},   // the current epoch: the high watermark
		{-1, -1}, // a future epoch: unknown
		{-1, -1}, // no epoch
		{1, 0},   // older than every batch: the requested epoch, the start of epoch 2
		{2, 3},   // the start of the next epoch
		{2, 3},   // no batch has epoch 3: the largest epoch below it
		{4, 5},
		{4, 5},
		{7, 6}, // no batch of epoch 8 or later: the log end
		{7, 6},
	}
	for _, indexed := range []bool{false, true} {
		for v := int16(0); v <= 4; v++ {
			h := startServer(t, Config{})
			h.fb.set(func(b *fakeBackend) { b.epochIndex = indexed })
			epochLog(h.fb.addTopic("t", 1)[0])
			current := int32(-1)
			if v >= 2 {
				current = 9
			}
			resp := h.dial().roundTrip(offsetForLeaderEpochRequest(v, "t", current, epochs...)).(*kmsg.OffsetForLeaderEpochResponse)
			for i, w := range want {
				got := resp.Topics[0].Partitions[i]
				wantEpoch := w.epoch
				if v == 0 {
					wantEpoch = -1 // not on the wire
				}
				if got.ErrorCode != 0 || got.LeaderEpoch != wantEpoch || got.EndOffset != w.end {
					t.Errorf("indexed %v v%d epoch %d: error %d epoch %d end %d, want epoch %d end %d",
						indexed, v, epochs[i], got.ErrorCode, got.LeaderEpoch, got.EndOffset, wantEpoch, w.end)
				}
			}
		}
	}
}

// The search over batch headers agrees with a scan on logs of every shape
// (epochs with one batch or many, gaps, the log start after offset 0).
func TestSearchEpochEndMatchesScan(t *testing.T) {
	p := newFakePartition()
	for i := range 40 {
		p.set(func(p *fakePartition) { p.epoch = int32(3 + i/4*2 + i/10) })
		p.append(makeBatch(1, make([]string, 1+i%3)...))
	}
	p.set(func(p *fakePartition) { p.start = 3 }) // the third batch
	idx := epochIndexPartition{p}
	for e := int32(0); e < 40; e++ {
		floor, end, err := searchEpochEnd(p, e, 3, p.HighWatermark())
		wantFloor, wantEnd, _ := idx.EpochEndOffset(e)
		if err != nil || floor != wantFloor || end != wantEnd {
			t.Errorf("epoch %d: search %d %d %v, scan %d %d", e, floor, end, err, wantFloor, wantEnd)
		}
	}
}

func TestOffsetForLeaderEpochErrors(t *testing.T) {
	h := startServer(t, Config{})
	p := h.fb.addTopic("t", 1)[0] // epoch 5
	c := h.dial()
	for _, tc := range []struct {
		topic   string
		current int32
		leader  bool
		want    *kerr.Error
	}{
		{"nope", -1, true, kerr.UnknownTopicOrPartition},
		{"t", 6, true, kerr.UnknownLeaderEpoch},
		{"t", 4, true, kerr.FencedLeaderEpoch},
		{"t", -1, false, kerr.NotLeaderForPartition},
		// Kafka checks the epoch before leadership.
		{"t", 4, false, kerr.FencedLeaderEpoch},
		{"t", 5, false, kerr.NotLeaderForPartition},
	} {
		p.set(func(p *fakePartition) { p.leader = tc.leader })
		got := c.roundTrip(offsetForLeaderEpochRequest(4, tc.topic, tc.current, 5)).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
		if got.ErrorCode != tc.want.Code || got.LeaderEpoch != -1 || got.EndOffset != -1 {
			t.Errorf("%s current %d leader %v: %+v, want %s", tc.topic, tc.current, tc.leader, got, tc.want.Message)
		}
	}
}
