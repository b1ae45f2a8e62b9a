package txncoord

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddPartitionsToTxn answers AddPartitionsToTxn 0-3 (the client's form).
// If a partition does not exist, nothing is added: it is
// UNKNOWN_TOPIC_OR_PARTITION and every other partition
// OPERATION_NOT_ATTEMPTED, as in Kafka.
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var parts []TopicPartition
	unknown := map[TopicPartition]bool{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := TopicPartition{t.Topic, p}
			parts = append(parts, tp)
			if !c.cfg.TopicExists(t.Topic, p) {
				unknown[tp] = true
			}
		}
	}
	var err error
	if len(unknown) > 0 {
		err = kerr.OperationNotAttempted
	} else {
		err = c.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition = p
			rp.ErrorCode = Code(err, req.Version < 2)
			if unknown[TopicPartition{t.Topic, p}] {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// AddOffsetsToTxn answers AddOffsetsToTxn: it adds the group's
// __consumer_offsets partition to the transaction, for TxnOffsetCommit.
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	tp, ok := c.cfg.OffsetsPartition(req.Group)
	if !ok {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	err := c.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []TopicPartition{tp})
	resp.ErrorCode = Code(err, req.Version < 2)
	return resp
}

// EndTxnRequest answers EndTxn.
func (c *Coordinator) EndTxnRequest(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	err := c.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	resp.ErrorCode = Code(err, req.Version < 2)
	return resp
}

// Code is the wire code of err (0 for nil): its *kerr.Error, else
// UNKNOWN_SERVER_ERROR. PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for
// a request version older than KIP-588's, as Kafka answers old clients.
func Code(err error, beforeFenced bool) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.UnknownServerError.Code
	}
	if ke == kerr.ProducerFenced && beforeFenced {
		return kerr.InvalidProducerEpoch.Code
	}
	return ke.Code
}
