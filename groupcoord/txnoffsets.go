package groupcoord

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnLog is the optional Log capability that TxnOffsetCommit needs: it
// commits records as one transactional batch of a producer (id and epoch),
// which the View keeps pending until the producer's marker. Errors are as
// Append's; a stale epoch is kerr.InvalidProducerEpoch.
type TxnLog interface {
	AppendTxn(ctx context.Context, producerID int64, producerEpoch int16, records []Record) error
}

// TxnOffsetCommit serves TxnOffsetCommit v0-3: offsets a transactional
// producer commits for a group, pending until its transaction ends (the
// COMMIT marker the transaction coordinator writes into this partition).
// A commit with generation -1 and no member is allowed whatever the
// group's state, as in Kafka; one with a member is checked against the
// group like OffsetCommit (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// FENCED_INSTANCE_ID). Without a TxnLog it is UNSUPPORTED_VERSION.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	errs := make(map[[2]any]*kerr.Error)
	var recs []Record
	top := c.validateTxnCommit(req)
	now := time.Now().UnixMilli()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			key := [2]any{t.Topic, p.Partition}
			switch meta := deref(p.Metadata); {
			case top != nil:
				errs[key] = top
			case !c.cfg.TopicExists(t.Topic, p.Partition):
				errs[key] = kerr.UnknownTopicOrPartition
			case len(meta) > c.cfg.MaxOffsetMetadata:
				errs[key] = kerr.OffsetMetadataTooLarge
			default:
				recs = append(recs, OffsetRecord(req.Group, t.Topic, p.Partition, Offset{
					Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: meta, CommitTimestamp: now}))
			}
		}
	}
	if len(recs) > 0 {
		if err := c.appendTxn(ctx, req.ProducerID, req.ProducerEpoch, recs); err != nil {
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					if k := [2]any{t.Topic, p.Partition}; errs[k] == nil {
						errs[k] = err
					}
				}
			}
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if e := errs[[2]any{t.Topic, p.Partition}]; e != nil {
				rp.ErrorCode = e.Code
				if e == kerr.ProducerFenced && req.Version < 3 {
					rp.ErrorCode = kerr.InvalidProducerEpoch.Code
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// validateTxnCommit checks a TxnOffsetCommit against the group.
func (c *Coordinator) validateTxnCommit(req *kmsg.TxnOffsetCommitRequest) *kerr.Error {
	if _, ok := c.log.(TxnLog); !ok {
		return kerr.UnsupportedVersion
	}
	if req.Generation < 0 && req.MemberID == "" && req.InstanceID == nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return kerr.NotCoordinator
		}
		return nil
	}
	return c.validateCommit(req.Group, req.Generation, req.MemberID, req.InstanceID)
}

// appendTxn commits a producer's transactional records through the TxnLog
// within the commit timeout.
func (c *Coordinator) appendTxn(ctx context.Context, pid int64, epoch int16, recs []Record) *kerr.Error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	err := c.log.(TxnLog).AppendTxn(ctx, pid, epoch, recs)
	switch {
	case err == nil:
		return nil
	case c.ctx.Err() != nil:
		return kerr.NotCoordinator
	case errors.Is(err, kerr.InvalidProducerEpoch):
		return kerr.ProducerFenced
	}
	return appendError(err)
}
