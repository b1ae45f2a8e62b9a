package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// txnRequest sends req with kgo's routing (the transaction or group
// coordinator), again while the coordinator is not there yet.
func txnRequest[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request, code func(R) int16) R {
	t.Helper()
	var resp R
	eventually(t, 20*time.Second, "an answer from the coordinator", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		kresp, err := cl.Request(ctx, req)
		if err != nil {
			return false
		}
		resp = kresp.(R)
		switch code(resp) {
		case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code:
			return false
		}
		return true
	})
	return resp
}

// wantCode fails unless got is want's code (nil: no error).
func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var code int16
	if want != nil {
		code = want.Code
	}
	if got != code {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// TestTransactionBadInput: requests a transactional client should not
// send get Kafka's error codes and change nothing stored: the transaction
// stays empty and the group's offsets unset.
func TestTransactionBadInput(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t, v1Versions()) // the transactions v1 requests the test was written for
	createTopic(t, cl, "bad-in", 1, 3)

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("bad-tx"), 900_001
	ir := txnRequest(t, cl, init, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	wantCode(t, "InitProducerId over transaction.max.timeout.ms", ir.ErrorCode, kerr.InvalidTransactionTimeout)
	init.TransactionTimeoutMillis = 60_000
	ir = txnRequest(t, cl, init, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	wantCode(t, "InitProducerId", ir.ErrorCode, nil)
	pid, epoch := ir.ProducerID, ir.ProducerEpoch

	endTxn := func(what string, want *kerr.Error) {
		t.Helper()
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "bad-tx", pid, epoch, true
		resp := txnRequest(t, cl, req, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })
		wantCode(t, what, resp.ErrorCode, want)
	}
	endTxn("EndTxn without a transaction", kerr.InvalidTxnState)

	// A fresh request each time: kgo rewrites one into v4's batched form.
	add := func(epoch int16, topics ...string) *kmsg.AddPartitionsToTxnResponse {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "bad-tx", pid, epoch
		for _, topic := range topics {
			at := kmsg.NewAddPartitionsToTxnRequestTopic()
			at.Topic, at.Partitions = topic, []int32{0}
			req.Topics = append(req.Topics, at)
		}
		return txnRequest(t, cl, req, func(r *kmsg.AddPartitionsToTxnResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	}
	ar := add(epoch, "no-such-topic", "bad-in")
	wantCode(t, "AddPartitionsToTxn, unknown topic", ar.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "AddPartitionsToTxn, the known topic beside it", ar.Topics[1].Partitions[0].ErrorCode, kerr.OperationNotAttempted)
	endTxn("EndTxn after the refused AddPartitionsToTxn", kerr.InvalidTxnState) // nothing began

	ar = add(epoch+1, "bad-in")
	wantCode(t, "AddPartitionsToTxn v3 with another epoch", ar.Topics[0].Partitions[0].ErrorCode, kerr.ProducerFenced)
	endTxn("EndTxn after the fenced AddPartitionsToTxn", kerr.InvalidTxnState)

	txnOffsetCommitOtherGeneration(t, c, cl, pid, epoch)
}

// txnOffsetCommitOtherGeneration: a TxnOffsetCommit of a transaction
// that added the group, for a generation the group is not in, is
// ILLEGAL_GENERATION, and the group's offset stays unset, with nothing
// pending.
func txnOffsetCommitOtherGeneration(t *testing.T, c *testcluster.Cluster, cl *kgo.Client, pid int64, epoch int16) {
	t.Helper()
	wantCode(t, "AddOffsetsToTxn", addOffsetsToTxn(t, cl, "bad-tx", pid, epoch, "bad-group"), nil)
	member := c.Client(t, kgo.ConsumerGroup("bad-group"), kgo.ConsumeTopics("bad-in"))
	var id string
	var gen int32
	eventually(t, 30*time.Second, "the consumer joins its group", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		member.PollFetches(ctx)
		cancel()
		id, gen = member.GroupMetadata()
		return gen > 0
	})
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "bad-tx", "bad-group", pid, epoch
	req.Generation, req.MemberID = gen+1, id
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "bad-in"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 42
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := txnRequest(t, cl, req, func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	wantCode(t, "TxnOffsetCommit for another generation", resp.Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group, fetch.RequireStable = "bad-group", true
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "bad-in", []int32{0}
	fetch.Topics = append(fetch.Topics, ft)
	fr := txnRequest(t, cl, fetch, func(r *kmsg.OffsetFetchResponse) int16 { return r.ErrorCode })
	p := fr.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.Offset != -1 {
		t.Fatalf("the group's offset after the refused commit: %d (%v), want -1 and nothing pending", p.Offset, kerr.ErrorForCode(p.ErrorCode))
	}
}
