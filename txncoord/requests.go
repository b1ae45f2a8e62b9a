package txncoord

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddPartitionsToTxn answers AddPartitionsToTxn 0-3 (the client's form).
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var parts []TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, TopicPartition{t.Topic, p})
		}
	}
	errs := c.addRequested(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, 0)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, Code(errs[i], req.Version < 2)
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// AddPartitionsToTxnTransaction answers one transaction of an
// AddPartitionsToTxn v4-5, the brokers' form that batches transactions:
// with VerifyOnly it only checks that the partitions are in the
// transaction (Verify), else it adds them as AddPartitionsToTxn does; at
// v5 (a partition leader adding for transactions v2) the transaction is
// of version 2.
func (c *Coordinator) AddPartitionsToTxnTransaction(ctx context.Context, t *kmsg.AddPartitionsToTxnRequestTransaction, version int16) kmsg.AddPartitionsToTxnResponseTransaction {
	var parts []TopicPartition
	for _, rt := range t.Topics {
		for _, p := range rt.Partitions {
			parts = append(parts, TopicPartition{rt.Topic, p})
		}
	}
	var errs []error
	switch {
	case t.VerifyOnly:
		errs = c.Verify(t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts)
	case version >= 5:
		errs = c.addRequested(ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts, TxnVersion2)
	default:
		errs = c.addRequested(ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts, 0)
	}
	return transactionResult(t, func(i int) int16 { return Code(errs[i], false) })
}

// transactionResult is the answer to one transaction of an
// AddPartitionsToTxn v4: code(i) is the error code of its i-th partition,
// counted in request order.
func transactionResult(t *kmsg.AddPartitionsToTxnRequestTransaction, code func(i int) int16) kmsg.AddPartitionsToTxnResponseTransaction {
	res := kmsg.NewAddPartitionsToTxnResponseTransaction()
	res.TransactionalID = t.TransactionalID
	i := 0
	for _, rt := range t.Topics {
		topic := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		topic.Topic = rt.Topic
		for _, p := range rt.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition, rp.ErrorCode = p, code(i)
			topic.Partitions = append(topic.Partitions, rp)
			i++
		}
		res.Topics = append(res.Topics, topic)
	}
	return res
}

// addRequested adds parts to id's transaction for AddPartitionsToTxn and
// returns each part's error. If a partition does not exist nothing is
// added: it is UNKNOWN_TOPIC_OR_PARTITION and every other one
// OPERATION_NOT_ATTEMPTED, as in Kafka.
func (c *Coordinator) addRequested(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition, txnVersion int16) []error {
	errs := make([]error, len(parts))
	unknown := false
	for i, tp := range parts {
		if !c.cfg.TopicExists(tp.Topic, tp.Partition) {
			errs[i], unknown = kerr.UnknownTopicOrPartition, true
		}
	}
	err := error(kerr.OperationNotAttempted)
	if !unknown {
		err = c.addPartitions(ctx, id, pid, epoch, parts, txnVersion)
	}
	for i := range errs {
		if errs[i] == nil {
			errs[i] = err
		}
	}
	return errs
}

// AddOffsetsToTxn answers AddOffsetsToTxn: it adds the group's
// __consumer_offsets partition to the transaction, for TxnOffsetCommit.
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	tp, ok := c.cfg.OffsetsPartition(ctx, req.Group)
	if !ok {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	err := c.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []TopicPartition{tp})
	resp.ErrorCode = Code(err, req.Version < 2)
	return resp
}

// EndTxnRequest answers EndTxn: from v5 a transaction of version 2
// (EndTxnV2), which answers with the producer's next id and epoch, before
// it EndTxn. The request's version decides, as in Kafka.
func (c *Coordinator) EndTxnRequest(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if req.Version >= 5 {
		var err error
		resp.ProducerID, resp.ProducerEpoch, err = c.EndTxnV2(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		resp.ErrorCode = Code(err, false)
		return resp
	}
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
