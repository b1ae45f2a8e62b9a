package fsm_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/fsm"
)

// A coordinator's batch (FlagCoordinator: a transactional offset commit
// with sequence -1) is appended with only its epoch checked, while a
// client's batch with sequence -1 stays OUT_OF_ORDER_SEQUENCE_NUMBER; the
// COMMIT marker then ends it like any transaction.
func TestCoordinatorBatchSkipsSequences(t *testing.T) {
	r := openReplica(t, t.TempDir())
	defer r.close()
	coord := func(index uint64, epoch int16, v string) *fsm.ProduceResult {
		cmd := fsm.EncodeProduceAt(txnBatch(9, epoch, -1, v), 1234, fsm.FlagCoordinator)
		return result(t, r.f.Apply(command(index, cmd)))
	}
	if res := coord(1, 3, "o1"); res.Err != nil || res.BaseOffset != 0 {
		t.Fatalf("coordinator batch: %+v", res)
	}
	if res := coord(2, 3, "o2"); res.Err != nil || res.BaseOffset != 1 {
		t.Fatalf("second coordinator batch, same sequence -1: %+v", res)
	}
	client := result(t, r.f.Apply(command(3, fsm.EncodeProduce(txnBatch(9, 3, -1, "c")))))
	var fe *fsm.Error
	if !errors.As(client.Err, &fe) || fe.Code != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("client batch with sequence -1: %+v", client)
	}
	if res := result(t, r.f.Apply(endTxn(4, 9, 4, true, 1))); res.Err != nil || res.BaseOffset != 2 {
		t.Fatalf("commit marker: %+v", res)
	}
	stale := coord(5, 3, "o3")
	if !errors.As(stale.Err, &fe) || fe.Code != kerr.InvalidProducerEpoch {
		t.Fatalf("coordinator batch of a fenced epoch: %+v", stale)
	}
}
