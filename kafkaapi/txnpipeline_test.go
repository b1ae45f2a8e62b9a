package kafkaapi

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// heldCoordinator answers the brokers' AddPartitionsToTxn at once, except
// for the transactional id "held", which it holds until release closes,
// and "boom", for which it panics.
type heldCoordinator struct {
	TxnCoordinator // nil: only AddPartitionsToTxnTransaction is called
	release        chan struct{}
	mu             sync.Mutex // guards answered
	answered       []string
}

func (c *heldCoordinator) AddPartitionsToTxnTransaction(ctx context.Context, t *kmsg.AddPartitionsToTxnRequestTransaction, _ int16) kmsg.AddPartitionsToTxnResponseTransaction {
	if t.TransactionalID == "boom" {
		panic("boom")
	}
	if t.TransactionalID == "held" {
		select {
		case <-c.release:
		case <-ctx.Done():
		}
	}
	c.mu.Lock()
	c.answered = append(c.answered, t.TransactionalID)
	c.mu.Unlock()
	rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
	rt.TransactionalID = t.TransactionalID
	return rt
}

func (c *heldCoordinator) hasAnswered(ids ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if !slices.Contains(c.answered, id) {
			return false
		}
	}
	return true
}

type heldTxnBackend struct {
	*fakeBackend
	coord *heldCoordinator
}

func (b heldTxnBackend) TxnCoordinator(context.Context, string) (TxnCoordinator, error) {
	return b.coord, nil
}

// brokersAddRequest is an AddPartitionsToTxn v5 of one transaction per
// id, each adding partition 0 of "t".
func brokersAddRequest(ids ...string) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	for i, id := range ids {
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID, t.ProducerID = id, int64(i)
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = "t", []int32{0}
		t.Topics = append(t.Topics, tt)
		req.Transactions = append(req.Transactions, t)
	}
	return req
}

// A partition leader sends its verifications to a coordinator's node on
// one connection. A transaction that its coordinator holds (waiting for
// the previous transaction's markers) must not hold the other
// transactions of its request, nor the requests behind it: they are
// served meanwhile, and the answers still come in order.
func TestBrokersAddPartitionsToTxnDoNotWaitForOneHeld(t *testing.T) {
	coord := &heldCoordinator{release: make(chan struct{})}
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend { return heldTxnBackend{fb, coord} })
	var once sync.Once
	release := func() { once.Do(func() { close(coord.release) }) }
	t.Cleanup(release)
	c := h.dial()
	first := c.send(brokersAddRequest("held", "beside"))
	second := c.send(brokersAddRequest("behind"))
	eventually(t, "the transactions beside and behind the held one to be served while it is held",
		func() bool { return coord.hasAnswered("beside", "behind") })
	if coord.hasAnswered("held") {
		t.Fatal("the held transaction was answered before its release")
	}
	release()
	for _, want := range []struct {
		corr int32
		ids  []string
	}{{first, []string{"held", "beside"}}, {second, []string{"behind"}}} {
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		resp.Version = 5
		if got := c.read(resp); got != want.corr {
			t.Fatalf("response correlation id %d, want %d (answers out of order)", got, want.corr)
		}
		var ids []string
		for _, rt := range resp.Transactions {
			ids = append(ids, rt.TransactionalID)
		}
		if resp.ErrorCode != 0 || !slices.Equal(ids, want.ids) {
			t.Fatalf("response %d: error %d, transactions %v, want %v", want.corr, resp.ErrorCode, ids, want.ids)
		}
	}
}

// A panic serving a brokers' AddPartitionsToTxn, which runs on a goroutine
// of its own, is guarded as one on the connection's reader or writer: the
// connection closes, the panic is counted and logged with its stack, and
// the server goes on serving.
func TestBrokersAddPartitionsToTxnPanicClosesOnlyItsConnection(t *testing.T) {
	logs := &logRecords{}
	coord := &heldCoordinator{release: make(chan struct{})}
	h := startServerWith(t, Config{Logger: slog.New(logs)}, func(fb *fakeBackend) Backend { return heldTxnBackend{fb, coord} })
	c := h.dial()
	c.send(brokersAddRequest("boom"))
	c.requireClosed()
	if got := h.srv.Requests().Panics; got != 1 {
		t.Fatalf("panics counted: %d, want 1", got)
	}
	if st := logs.stacks(); len(st) != 1 || !strings.Contains(st[0], "heldCoordinator).AddPartitionsToTxnTransaction") {
		t.Fatalf("logged stacks %q, want one through the coordinator", st)
	}
	h.requireServing()
}
