package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/record"
)

// Special ListOffsets timestamps. The tiered-storage ones are answered as
// Kafka answers them for a topic without remote storage, which every
// topic here is: the local log is the whole log.
const (
	latestTimestamp   = -1 // the high watermark, or the last stable offset for read_committed
	earliestTimestamp = -2 // the log start offset
	maxTimestamp      = -3 // the record with the largest timestamp (KIP-734)
	// earliestLocalTimestamp (KIP-405) is the local log's start: the log
	// start offset.
	earliestLocalTimestamp = -4
	// latestTieredTimestamp (KIP-1005) and earliestPendingUploadTimestamp
	// (KIP-1023) find nothing tiered: offset -1, epoch -1, no error.
	latestTieredTimestamp          = -5
	earliestPendingUploadTimestamp = -6
)

// specialTimestampVersion is the request version each special timestamp
// needs (ReplicaManager.timestampMinSupportedVersion); any other negative
// timestamp, or one asked at a lower version, answers UNSUPPORTED_VERSION.
var specialTimestampVersion = map[int64]int16{
	latestTimestamp:                1,
	earliestTimestamp:              1,
	maxTimestamp:                   7,
	earliestLocalTimestamp:         8,
	latestTieredTimestamp:          9,
	earliestPendingUploadTimestamp: 11,
}

// listOffsetsRequestError is the error Kafka answers a v1+ partition with
// before looking at it (ReplicaManager.fetchOffset): INVALID_REQUEST when
// the request names it twice, UNSUPPORTED_VERSION for a special timestamp
// this version does not have.
func listOffsetsRequestError(version int16, rp *kmsg.ListOffsetsRequestTopicPartition, duplicated bool) error {
	if duplicated {
		return kerr.InvalidRequest
	}
	if rp.Timestamp < 0 {
		if v, ok := specialTimestampVersion[rp.Timestamp]; !ok || version < v {
			return kerr.UnsupportedVersion
		}
	}
	return nil
}

// duplicatedPartitions are the partitions a ListOffsets names more than
// once (nil when none is).
func duplicatedPartitions(topics []kmsg.ListOffsetsRequestTopic) map[topicPartition]bool {
	seen := make(map[topicPartition]bool)
	var dup map[topicPartition]bool
	for _, rt := range topics {
		for _, rp := range rt.Partitions {
			k := topicPartition{rt.Topic, rp.Partition}
			if seen[k] {
				if dup == nil {
					dup = make(map[topicPartition]bool)
				}
				dup[k] = true
			}
			seen[k] = true
		}
	}
	return dup
}

// startListOffsets answers when its turn comes, from the partitions'
// current state; a topic the client may not DESCRIBE answers
// TOPIC_AUTHORIZATION_FAILED. v10's TimeoutMillis bounds Kafka's wait for
// remote storage; with none, every answer is immediate.
func (s *Server) startListOffsets(req *kmsg.ListOffsetsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		dup := duplicatedPartitions(req.Topics)
		resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
		for ti := range req.Topics {
			rt := &req.Topics[ti]
			st := &resp.Topics[ti]
			*st = kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			st.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(rt.Partitions))
			describable := s.authorizeTopic(ctx, acl.OpDescribe, rt.Topic)
			for pi := range rt.Partitions {
				rp := &rt.Partitions[pi]
				sp := &st.Partitions[pi]
				*sp = kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				if !describable {
					sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
					if req.Version == 0 {
						sp.OldStyleOffsets = []int64{}
					}
					continue
				}
				if req.Version == 0 {
					offsets, err := s.listOffsetV0(ctx, rt.Topic, rp)
					sp.OldStyleOffsets, sp.ErrorCode = offsets, ErrorCode(err)
					continue
				}
				if err := listOffsetsRequestError(req.Version, rp, dup[topicPartition{rt.Topic, rp.Partition}]); err != nil {
					sp.ErrorCode = ErrorCode(err)
					continue
				}
				found, err := s.listOffset(ctx, rt.Topic, rp, req.IsolationLevel == readCommitted)
				if err != nil {
					sp.ErrorCode = ErrorCode(err)
					continue
				}
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = found.Offset, found.Timestamp, found.LeaderEpoch
			}
		}
		return resp, nil
	}
}

// listOffsetV0 answers ListOffsets v0, which asks for up to MaxNumOffsets
// offsets "before" a timestamp, newest first. Kafka answers from segment
// base offsets and file modification times; clients read the first offset
// only. We answer one offset, the one v1 gives: the log start (-2), the
// high watermark (-1), or the first batch at or after the timestamp, and
// the high watermark when there is none (as Kafka's newest "segment", the
// log end, counts as written now).
func (s *Server) listOffsetV0(ctx context.Context, topic string, rp *kmsg.ListOffsetsRequestTopicPartition) ([]int64, error) {
	found, err := s.listOffset(ctx, topic, rp, false)
	if err != nil {
		return []int64{}, err
	}
	if found.Offset < 0 {
		latest := *rp
		latest.Timestamp = latestTimestamp
		if found, err = s.listOffset(ctx, topic, &latest, false); err != nil {
			return []int64{}, err
		}
	}
	if rp.MaxNumOffsets <= 0 {
		return []int64{}, nil
	}
	return []int64{found.Offset}, nil
}

// listOffset answers one partition. With committed (read_committed), as in
// Kafka, the latest offset is the last stable offset, and a timestamp
// lookup finds nothing at or past it.
func (s *Server) listOffset(ctx context.Context, topic string, rp *kmsg.ListOffsetsRequestTopicPartition, committed bool) (TimestampOffset, error) {
	none := TimestampOffset{Offset: -1, Timestamp: -1, LeaderEpoch: -1}
	p, epoch, err := s.leader(topic, rp.Partition, rp.CurrentLeaderEpoch)
	if err != nil {
		return none, err
	}
	// A new leader's high watermark is short until it has applied its
	// predecessors' entries; Kafka answers OFFSET_NOT_AVAILABLE then.
	if err := p.Settle(ctx); err != nil {
		return none, err
	}
	var (
		found TimestampOffset
		ok    bool
	)
	switch rp.Timestamp {
	case latestTimestamp:
		o := readOffsets(p)
		if committed {
			return TimestampOffset{Offset: o.lso, Timestamp: -1, LeaderEpoch: epoch}, nil
		}
		return TimestampOffset{Offset: o.hw, Timestamp: -1, LeaderEpoch: epoch}, nil
	case latestTieredTimestamp, earliestPendingUploadTimestamp:
		return none, nil
	case earliestTimestamp, earliestLocalTimestamp:
		// Kafka answers the epoch of its first leader epoch entry: the
		// first batch's, or the current one for an empty log.
		start := p.LogStartOffset()
		if start < p.HighWatermark() {
			h, err := batchAt(p, start)
			if err != nil {
				return none, err
			}
			epoch = h.PartitionLeaderEpoch
		}
		return TimestampOffset{Offset: start, Timestamp: -1, LeaderEpoch: epoch}, nil
	case maxTimestamp:
		found, ok = p.MaxTimestamp()
	default:
		found, ok = p.OffsetForTimestamp(rp.Timestamp)
		if ok {
			found = s.firstRecordAt(p, found, rp.Timestamp)
		}
	}
	if !ok || (committed && found.Offset >= readOffsets(p).lso) {
		return none, nil // Kafka answers "no such record" with offset -1 and no error
	}
	return found, nil
}

// firstRecordAt turns the batch found for a timestamp into Kafka's answer
// (FileRecords.searchForTimestamp): the first record of that batch whose
// timestamp is at or after ts and whose offset is at or after the log
// start, with its own timestamp, and the batch's leader epoch. If the
// batch cannot be read or decoded, the batch's base offset and max
// timestamp stand.
func (s *Server) firstRecordAt(p Partition, batch TimestampOffset, ts int64) TimestampOffset {
	start := p.LogStartOffset()
	data, err := p.Read(max(batch.Offset, start), 1) // the batch may begin before the log start
	var h record.Header
	if err == nil {
		h, err = record.ParseHeader(data)
	}
	var recs []record.Record
	if err == nil && h.BaseOffset == batch.Offset {
		recs, err = record.AppendRecords(nil, data[:min(h.Size(), len(data))])
	}
	if err != nil {
		s.log.Debug("kafkaapi: ListOffsets: cannot read the batch found for a timestamp", "offset", batch.Offset, "err", err)
		return batch
	}
	for _, r := range recs {
		if r.Timestamp >= ts && r.Offset >= start {
			return TimestampOffset{Offset: r.Offset, Timestamp: r.Timestamp, LeaderEpoch: h.PartitionLeaderEpoch}
		}
	}
	return batch
}
