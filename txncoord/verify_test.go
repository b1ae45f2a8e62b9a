package txncoord

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Verify answers a partition leader: nil for a partition of the ongoing
// transaction, INVALID_TXN_STATE for one not added or once the
// transaction has ended, and the transaction's own error (another
// producer id or epoch) for every partition.
func TestVerifyPartitionsInTransaction(t *testing.T) {
	ctx := context.Background()
	view, mk := NewView(), &memMarkers{}
	c := newTestCoordinator(t, view, mk, Config{})
	pid, epoch, err := c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	added, other := TopicPartition{"a", 0}, TopicPartition{"a", 1}
	both := []TopicPartition{added, other}
	expect := func(what string, got []error, want ...error) {
		t.Helper()
		for i := range want {
			if !errors.Is(got[i], want[i]) || (want[i] == nil) != (got[i] == nil) {
				t.Fatalf("%s: %v, want %v", what, got, want)
			}
		}
	}
	expect("no transaction", c.Verify("t", pid, epoch, both), kerr.InvalidTxnState, kerr.InvalidTxnState)
	if err := c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{added}); err != nil {
		t.Fatal(err)
	}
	expect("ongoing", c.Verify("t", pid, epoch, both), nil, kerr.InvalidTxnState)
	expect("another epoch", c.Verify("t", pid, epoch+1, both), kerr.ProducerFenced, kerr.ProducerFenced)
	expect("another producer", c.Verify("t", pid+1, epoch, both), kerr.InvalidProducerIDMapping, kerr.InvalidProducerIDMapping)
	expect("unknown id", c.Verify("u", pid, epoch, both), kerr.InvalidProducerIDMapping, kerr.InvalidProducerIDMapping)
	if err := c.EndTxn(ctx, "t", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	waitState(t, view, "t", CompleteCommit)
	expect("committed", c.Verify("t", pid, epoch, both), kerr.InvalidTxnState, kerr.InvalidTxnState)
	if ids := view.IDs(); len(ids) != 1 {
		t.Fatalf("verification made ids: %v", ids)
	}
}

// AddPartitionsToTxn v4 answers each transaction: VerifyOnly adds
// nothing; the other form adds.
func TestAddPartitionsToTxnTransaction(t *testing.T) {
	ctx := context.Background()
	view := NewView()
	c := newTestCoordinator(t, view, &memMarkers{}, Config{})
	pid, epoch, err := c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	txn := kmsg.NewAddPartitionsToTxnRequestTransaction()
	txn.TransactionalID, txn.ProducerID, txn.ProducerEpoch, txn.VerifyOnly = "t", pid, epoch, true
	txn.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{0, 1}}}
	codes := func(r kmsg.AddPartitionsToTxnResponseTransaction) []int16 {
		var out []int16
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				out = append(out, rp.ErrorCode)
			}
		}
		return out
	}
	r := c.AddPartitionsToTxnTransaction(ctx, &txn, 4)
	if got := codes(r); r.TransactionalID != "t" || len(got) != 2 || got[0] != kerr.InvalidTxnState.Code || got[1] != kerr.InvalidTxnState.Code {
		t.Fatalf("verify before adding: %+v", r)
	}
	if m, _ := view.Txn("t"); m.State != Empty {
		t.Fatalf("a verification changed the state: %+v", m)
	}
	txn.VerifyOnly = false
	if got := codes(c.AddPartitionsToTxnTransaction(ctx, &txn, 4)); got[0] != 0 || got[1] != 0 {
		t.Fatalf("add: %v", got)
	}
	txn.VerifyOnly = true
	if got := codes(c.AddPartitionsToTxnTransaction(ctx, &txn, 4)); got[0] != 0 || got[1] != 0 {
		t.Fatalf("verify after adding: %v", got)
	}
}
