package kafkaapi

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// verifyingBackend is the fake backend with a coordinator that knows the
// partitions in added, for producer 7 at epoch 0 of "tx".
type verifyingBackend struct {
	*fakeBackend
	mu    sync.Mutex // guards added and asked
	added map[TopicPartition]bool
	asked [][]TopicPartition
}

var _ Backend = (*verifyingBackend)(nil)

func (b *verifyingBackend) VerifyTxnPartitions(_ context.Context, id string, pid int64, epoch int16, parts []TopicPartition) []error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, parts)
	errs := make([]error, len(parts))
	for i, tp := range parts {
		switch {
		case id != "tx" || pid != 7:
			errs[i] = kerr.InvalidProducerIDMapping
		case epoch != 0:
			errs[i] = kerr.ProducerFenced
		case !b.added[tp]:
			errs[i] = kerr.InvalidTxnState
		}
	}
	return errs
}

func (b *verifyingBackend) askedParts() [][]TopicPartition {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.asked
}

func txnProduceRequest(id *string, batches map[int32][]byte) *kmsg.ProduceRequest {
	req := produceRequest(9, -1, "t", batches)
	req.TransactionID = id
	return req
}

// A transactional batch goes only into a partition its coordinator says
// the transaction holds: the others are INVALID_TXN_STATE and nothing is
// written there; one request asks once for all its partitions; a batch
// without the request's transactional id is refused; with verification
// off everything is written.
func TestProduceVerifiesTransactionalBatches(t *testing.T) {
	vb := &verifyingBackend{added: map[TopicPartition]bool{{"t", 0}: true}}
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend { vb.fakeBackend = fb; return vb })
	ps := h.fb.addTopic("t", 3)
	c := h.dial()
	resp := produce(t, c, txnProduceRequest(kmsg.StringPtr("tx"), map[int32][]byte{
		0: makeTxnBatch(7, 0, 0, "in"), 1: makeTxnBatch(7, 0, 0, "out"), 2: makeBatch(1, "plain")}))
	if rp := partitionResult(t, resp, "t", 0); rp.ErrorCode != 0 || len(ps[0].batches()) != 1 {
		t.Fatalf("added partition: %+v", rp)
	}
	if rp := partitionResult(t, resp, "t", 1); rp.ErrorCode != kerr.InvalidTxnState.Code || len(ps[1].batches()) != 0 {
		t.Fatalf("partition not added: %+v, %d batches", rp, len(ps[1].batches()))
	}
	if rp := partitionResult(t, resp, "t", 2); rp.ErrorCode != 0 {
		t.Fatalf("plain batch: %+v", rp)
	}
	if asked := vb.askedParts(); len(asked) != 1 || len(asked[0]) != 2 {
		t.Fatalf("asked the coordinator %v, want once for partitions 0 and 1", asked)
	}

	resp = produce(t, c, txnProduceRequest(nil, map[int32][]byte{1: makeTxnBatch(7, 0, 0, "no id")}))
	if rp := partitionResult(t, resp, "t", 1); rp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || len(ps[1].batches()) != 0 {
		t.Fatalf("without a transactional id: %+v", rp)
	}
	resp = produce(t, c, txnProduceRequest(kmsg.StringPtr("tx"), map[int32][]byte{1: makeTxnBatch(7, 1, 0, "zombie")}))
	if rp := partitionResult(t, resp, "t", 1); rp.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("fenced epoch: %+v", rp)
	}

	off := startServerWith(t, Config{DisableTxnPartitionVerification: true}, func(fb *fakeBackend) Backend {
		return &verifyingBackend{fakeBackend: fb}
	})
	p := off.fb.addTopic("t", 1)[0]
	resp = produce(t, off.dial(), txnProduceRequest(kmsg.StringPtr("tx"), map[int32][]byte{0: makeTxnBatch(7, 0, 0, "x")}))
	if rp := partitionResult(t, resp, "t", 0); rp.ErrorCode != 0 || len(p.batches()) != 1 {
		t.Fatalf("verification off: %+v", rp)
	}
}

// The coordinator's answers become what Kafka tells producers.
func TestVerifyErrorTranslation(t *testing.T) {
	for _, c := range []struct {
		in   error
		want *kerr.Error
	}{
		{kerr.InvalidTxnState, kerr.InvalidTxnState},
		{kerr.TransactionAbortable, kerr.InvalidTxnState},
		{kerr.ProducerFenced, kerr.InvalidProducerEpoch},
		{kerr.NotCoordinator, kerr.NotEnoughReplicas},
		{kerr.CoordinatorLoadInProgress, kerr.NotEnoughReplicas},
		{kerr.CoordinatorNotAvailable, kerr.NotEnoughReplicas},
		{kerr.ConcurrentTransactions, kerr.NotEnoughReplicas},
		{kerr.InvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
		{errors.New("connection refused"), kerr.NetworkException},
	} {
		if got := ErrorCode(verifyError(c.in, 9)); got != c.want.Code {
			t.Errorf("%v: code %d, want %v", c.in, got, c.want)
		}
	}
	// From Produce v11 a partition not added is abortable (KIP-890).
	for _, in := range []error{kerr.InvalidTxnState, kerr.TransactionAbortable} {
		if got := ErrorCode(verifyError(in, 11)); got != kerr.TransactionAbortable.Code {
			t.Errorf("v11 %v: code %d, want TRANSACTION_ABORTABLE", in, got)
		}
	}
	if got := ErrorCode(verifyError(kerr.ProducerFenced, 12)); got != kerr.InvalidProducerEpoch.Code {
		t.Errorf("v12 fenced: code %d", got)
	}
	// From v12 (transactions v2) a transaction still completing is
	// answered as it is (Kafka 4.0, KAFKA-18662).
	if got := ErrorCode(verifyError(kerr.ConcurrentTransactions, 12)); got != kerr.ConcurrentTransactions.Code {
		t.Errorf("v12 concurrent transactions: code %d, want CONCURRENT_TRANSACTIONS", got)
	}
	if got := ErrorCode(verifyError(context.DeadlineExceeded, 9)); got != kerr.RequestTimedOut.Code {
		t.Errorf("deadline: %d", got)
	}
}
