package kafkaapi

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/record"
)

// startOffsetForLeaderEpoch answers when its turn comes. Clients send it
// after a leader change (KIP-320) to learn where the epoch of the last
// record they consumed ended on the new leader: a smaller end offset than
// their position means the log was truncated under them.
func (s *Server) startOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, len(req.Topics))
		for ti := range req.Topics {
			rt := &req.Topics[ti]
			st := &resp.Topics[ti]
			*st = kmsg.NewOffsetForLeaderEpochResponseTopic()
			st.Topic = rt.Topic
			st.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(rt.Partitions))
			var authErr error
			if !s.authorizeTopic(ctx, acl.OpDescribe, rt.Topic) {
				authErr = kerr.TopicAuthorizationFailed
			}
			for pi := range rt.Partitions {
				rp := &rt.Partitions[pi]
				sp := &st.Partitions[pi]
				*sp = kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				sp.Partition = rp.Partition
				epoch, end, err := int32(-1), int64(-1), authErr
				if err == nil {
					epoch, end, err = s.epochEndOffset(ctx, rt.Topic, rp)
				}
				sp.ErrorCode = ErrorCode(err)
				if err == nil {
					sp.LeaderEpoch, sp.EndOffset = epoch, end
				}
			}
		}
		return resp, nil
	}
}

// epochEndOffset answers one partition as Kafka's leader epoch cache does
// (LeaderEpochFileCache.endOffsetFor), with the replica's current epoch as
// the newest entry: for the current epoch, the high watermark; for an
// older one, the start offset of the first later epoch, with the largest
// epoch at or below the requested one (the requested one if no batch has
// an epoch that small); for an unknown (-1) or future epoch, -1 and -1.
func (s *Server) epochEndOffset(ctx context.Context, topic string, rp *kmsg.OffsetForLeaderEpochRequestTopicPartition) (int32, int64, error) {
	p, current, err := s.leader(topic, rp.Partition, rp.CurrentLeaderEpoch)
	if err != nil {
		return -1, -1, err
	}
	// A new leader that has not applied its predecessors' entries yet
	// would answer from a short log: that looks like truncation.
	if err := p.Settle(ctx); err != nil {
		return -1, -1, err
	}
	want := rp.LeaderEpoch
	hw := p.HighWatermark()
	switch {
	case want < 0 || want > current:
		return -1, -1, nil
	case want == current:
		return want, hw, nil
	}
	floor, end, err := p.EpochEndOffset(want)
	if err != nil {
		return -1, -1, err
	}
	if floor < 0 {
		floor = want
	}
	return floor, min(end, hw), nil
}

// batchAt reads the header of the batch that holds offset.
func batchAt(p Partition, offset int64) (record.Header, error) {
	data, err := p.Read(offset, 1)
	if err != nil {
		return record.Header{}, err
	}
	h, err := record.ParseHeader(data)
	if err != nil {
		return h, err
	}
	if offset < h.BaseOffset || offset >= h.NextOffset() {
		return h, fmt.Errorf("kafkaapi: reading offset %d returned batch [%d, %d)", offset, h.BaseOffset, h.NextOffset())
	}
	return h, nil
}
