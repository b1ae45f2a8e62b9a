package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/record"
)

// produceTxnBatch sends producer pid's transactional batch of one record
// to the partition's leader, with the transactional id id, and returns
// the partition's error code; it asks again while the answer says to
// retry (leadership moving, the coordinator not there yet).
func produceTxnBatch(t *testing.T, c *testcluster.Cluster, cl *kgo.Client, id *string, topic string, p int32, pid int64, epoch int16, seq int32) int16 {
	t.Helper()
	batch, err := record.AppendBatch(nil, record.BatchOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: true},
		[]record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	nameTopicsByID(t, cl, req)
	var code int16
	eventually(t, 20*time.Second, "a final answer to Produce", func() bool {
		leader, _ := c.Leader(topic, p, 10*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := cl.Broker(int(leader)).Request(ctx, req)
		if err != nil {
			return false
		}
		code = resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		switch code {
		case kerr.NotLeaderForPartition.Code, kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code:
			return false
		}
		return true
	})
	return code
}

// logEnd is the partition's latest offset (ListOffsets).
func logEnd(t *testing.T, cl *kgo.Client, topic string, p int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ListOffsets %s-%d: %v %+v", topic, p, err, resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// TestTransactionalBatchForPartitionNotAdded (KIP-890): a transactional
// batch for a partition its transaction does not hold is refused (at
// Produce v11, Kafka 3.9's, TRANSACTION_ABORTABLE) and writes nothing, on
// 3 nodes; so is the next transaction's first batch
// to a partition of the previous one (its verification ended with the
// marker); a batch without the transactional id is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func TestTransactionalBatchForPartitionNotAdded(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t, v1Versions()) // the transactions v1 requests the test was written for
	createTopic(t, cl, "verify", 2, 3)
	id := kmsg.StringPtr("verify-tx")

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = id, 60_000
	ir := txnRequest(t, cl, init, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	wantCode(t, "InitProducerId", ir.ErrorCode, nil)
	pid, epoch := ir.ProducerID, ir.ProducerEpoch

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = *id, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "verify", []int32{0}
	add.Topics = append(add.Topics, at)
	ar := txnRequest(t, cl, add, func(r *kmsg.AddPartitionsToTxnResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	wantCode(t, "AddPartitionsToTxn verify-0", ar.Topics[0].Partitions[0].ErrorCode, nil)

	wantCode(t, "a batch for the partition not added", produceTxnBatch(t, c, cl, id, "verify", 1, pid, epoch, 0), kerr.TransactionAbortable)
	if end := logEnd(t, cl, "verify", 1); end != 0 {
		t.Fatalf("verify-1 holds %d offsets after the refused batch", end)
	}
	wantCode(t, "a batch without the transactional id", produceTxnBatch(t, c, cl, nil, "verify", 1, pid, epoch, 0), kerr.TransactionalIDAuthorizationFailed)
	wantCode(t, "a batch for the added partition", produceTxnBatch(t, c, cl, id, "verify", 0, pid, epoch, 0), nil)

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = *id, pid, epoch, true
	er := txnRequest(t, cl, end, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })
	wantCode(t, "EndTxn", er.ErrorCode, nil)
	var afterCommit int64
	eventually(t, 10*time.Second, "the COMMIT marker in verify-0", func() bool {
		afterCommit = logEnd(t, cl, "verify", 0)
		return afterCommit == 2 // the batch and its marker
	})
	wantCode(t, "the next transaction's batch before AddPartitionsToTxn",
		produceTxnBatch(t, c, cl, id, "verify", 0, pid, epoch, 1), kerr.TransactionAbortable)
	if got := logEnd(t, cl, "verify", 0); got != afterCommit {
		t.Fatalf("verify-0 grew from %d to %d offsets after the refused batch", afterCommit, got)
	}
}
