package client

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// Every transactional call made in the wrong state fails with
// ErrTransactionState and changes nothing; a transaction that added
// nothing ends without EndTxn (the fake refuses transaction requests).
func TestTransactionStateErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		p := fakeProducer(t, f, TransactionalID("tx"))
		ctx := t.Context()
		wrong := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, ErrTransactionState) {
				t.Fatalf("%s: %v, want ErrTransactionState", what, err)
			}
		}
		wrong("produce before InitTransactions", p.Produce(ctx, rec("events", "", "x"), nil))
		wrong("begin before InitTransactions", p.BeginTransaction())
		wrong("commit before InitTransactions", p.CommitTransaction(ctx))
		wrong("abort before InitTransactions", p.AbortTransaction(ctx))
		if err := p.InitTransactions(ctx); err != nil {
			t.Fatal(err)
		}
		wrong("InitTransactions twice", p.InitTransactions(ctx))
		wrong("produce outside a transaction", p.Produce(ctx, rec("events", "", "x"), nil))
		wrong("commit without a transaction", p.CommitTransaction(ctx))
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		wrong("begin twice", p.BeginTransaction())
		if err := p.CommitTransaction(ctx); err != nil {
			t.Fatalf("commit of an empty transaction: %v", err)
		}
		wrong("abort after commit", p.AbortTransaction(ctx))
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.AbortTransaction(ctx); err != nil {
			t.Fatalf("abort of an empty transaction: %v", err)
		}

		plain := fakeProducer(t, f)
		wrong("InitTransactions without TransactionalID", plain.InitTransactions(ctx))
		if got := f.producesReceived(); got != 0 {
			t.Fatalf("%d produce requests", got)
		}
	})
}

// Before a partition's first batch of a transaction the producer adds
// the partition (retrying CONCURRENT_TRANSACTIONS), its batches carry the
// transactional attribute, and commit ends with EndTxn; the next
// transaction adds its partitions again.
func TestTransactionAddsPartitionsThenCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 2, map[string]int{"events": 2})
		busy := 1
		f.onTxn = func(req kmsg.Request) int16 {
			if _, ok := req.(*kmsg.AddPartitionsToTxnRequest); ok && busy > 0 {
				busy--
				return ErrConcurrentTransactions.Code
			}
			return 0
		}
		p := fakeProducer(t, f, TransactionalID("tx"))
		ctx := t.Context()
		if err := p.InitTransactions(ctx); err != nil {
			t.Fatal(err)
		}
		for _, parts := range [][]int32{{0, 1}, {1}} {
			if err := p.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for _, part := range parts {
				r := rec("events", "", fmt.Sprint("v", part))
				r.ExplicitPartition, r.Partition = true, part
				if err := p.ProduceSync(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.CommitTransaction(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// The first transaction's two adds (in one request or two) come
		// before its commit, in either order.
		got := f.snapshotTxnLog()
		if len(got) != 5 || !slices.Equal(slices.Sorted(slices.Values(got[:2])), []string{"add events[0]", "add events[1]"}) ||
			!slices.Equal(got[2:], []string{"commit", "add events[1]", "commit"}) {
			t.Fatalf("transaction requests %v", got)
		}
		for _, a := range f.snapshotAttempts() {
			if !a.txn || a.code != 0 {
				t.Fatalf("produce attempt %+v: want transactional and accepted", a)
			}
		}
	})
}

// AbortTransaction fails the records not sent yet with
// ErrTransactionAborted, sends nothing of them, ends the transaction, and
// leaves the producer ready for the next one.
func TestAbortDropsUnsentRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		p := fakeProducer(t, f, TransactionalID("tx"), Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		ctx := t.Context()
		if err := p.InitTransactions(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var res []result
		for _, v := range []string{"a", "b"} {
			if err := p.Produce(ctx, rec("events", "", v), collector(&res)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.AbortTransaction(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 || !errors.Is(res[0].err, ErrTransactionAborted) || !errors.Is(res[1].err, ErrTransactionAborted) {
			t.Fatalf("results %+v, want ErrTransactionAborted twice", res)
		}
		if n := f.producesReceived(); n != 0 {
			t.Fatalf("%d produce requests for aborted records", n)
		}
		if log := f.snapshotTxnLog(); len(log) > 0 && log[len(log)-1] != "abort" {
			t.Fatalf("transaction requests %v: the transaction was added to, so it must end with abort", log)
		}
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.Produce(ctx, rec("events", "", "c"), nil); err != nil {
			t.Fatal(err)
		}
		if err := p.CommitTransaction(ctx); err != nil {
			t.Fatal(err)
		}
		if got := f.logValues("events", 0); !slices.Equal(got, []string{"c"}) {
			t.Fatalf("log %v, want [c]", got)
		}
	})
}

// A newer producer with the same TransactionalID fences the older: its
// next AddPartitionsToTxn gets PRODUCER_FENCED, which is fatal (a
// FencedError from Produce's promise, CommitTransaction and every later
// call).
func TestTransactionalIDFencedByNewerProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		ctx := t.Context()
		older := fakeProducer(t, f, TransactionalID("tx"))
		if err := older.InitTransactions(ctx); err != nil {
			t.Fatal(err)
		}
		newer := fakeProducer(t, f, TransactionalID("tx"))
		if err := newer.InitTransactions(ctx); err != nil {
			t.Fatal(err)
		}
		if err := older.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		err := older.ProduceSync(ctx, rec("events", "", "zombie"))
		var fe *FencedError
		if !errors.As(err, &fe) || !errors.Is(err, ErrProducerFenced) || !errors.Is(err, ErrProducerFencedCode) {
			t.Fatalf("produce of the older producer: %v, want a FencedError", err)
		}
		if err := older.CommitTransaction(ctx); !errors.Is(err, ErrProducerFenced) {
			t.Fatalf("commit of the fenced producer: %v", err)
		}
		if err := older.BeginTransaction(); !errors.Is(err, ErrProducerFenced) {
			t.Fatalf("begin of the fenced producer: %v", err)
		}
		if n := f.producesReceived(); n != 0 {
			t.Fatalf("%d produce requests from the fenced producer", n)
		}
	})
}

// A batch refused with OUT_OF_ORDER_SEQUENCE makes the transaction
// abortable (the producer needs a new epoch); AbortTransaction then gets
// the next epoch from InitProducerID, which aborts the transaction, instead
// of sending EndTxn, and the next transaction starts at sequence 0.
func TestAbortMovesToANewEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		refused := false
		f.onProduce = func(a attempt) fault {
			if !refused {
				refused = true
				return fault{code: ErrOutOfOrderSequence.Code}
			}
			return fault{}
		}
		p := fakeProducer(t, f, TransactionalID("tx"))
		ctx := t.Context()
		if err := p.InitTransactions(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, rec("events", "", "refused")); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("produce: %v, want OUT_OF_ORDER_SEQUENCE", err)
		}
		if err := p.CommitTransaction(ctx); !errors.Is(err, ErrAbortRequired) {
			t.Fatalf("commit: %v, want an AbortableTxnError", err)
		}
		if err := p.AbortTransaction(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, rec("events", "", "next")); err != nil {
			t.Fatal(err)
		}
		if err := p.CommitTransaction(ctx); err != nil {
			t.Fatal(err)
		}
		as := f.snapshotAttempts()
		first, last := as[0], as[len(as)-1]
		if last.pid != first.pid || last.epoch != first.epoch+1 || last.seq != 0 || last.values[0] != "next" {
			t.Fatalf("after the abort: %+v, want epoch %d sequence 0 (first %+v)", last, first.epoch+1, first)
		}
		if got := f.snapshotTxnLog(); !slices.Equal(got, []string{"add events[0]", "add events[0]", "commit"}) {
			t.Fatalf("transaction requests %v: the abort is InitProducerID's, not EndTxn's", got)
		}
	})
}

func TestTransactionalOptions(t *testing.T) {
	for name, opts := range map[string][]Opt{
		"without idempotence": {Brokers("x:1"), TransactionalID("t"), Idempotence(false)},
		"with a name":         {Brokers("x:1"), TransactionalID("t"), TransactionalName("t")},
		"zero timeout":        {Brokers("x:1"), TransactionalID("t"), TransactionTimeout(0)},
	} {
		if _, err := NewProducer(opts...); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want a ConfigError", name, err)
		}
	}
	if _, err := NewConsumer(Brokers("x:1"), IsolationLevel(2)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("isolation 2: %v, want a ConfigError", err)
	}
}

// txnBatch is one crafted batch of a fetched partition.
type txnBatch struct {
	offset int64
	pid    int64  // -1: a plain batch
	value  string // empty: a control batch
	abort  bool   // of a control batch: ABORT rather than COMMIT
}

func craftBatches(t *testing.T, bs []txnBatch) []byte {
	t.Helper()
	var out []byte
	for _, b := range bs {
		start := len(out)
		switch {
		case b.value == "":
			typ := record.ControlCommit
			if b.abort {
				typ = record.ControlAbort
			}
			out = record.AppendEndTxnMarker(out, b.pid, 0, 0, record.EndTxnMarker{Type: typ})
		default:
			opts := record.PlainBatch(0)
			if b.pid >= 0 {
				opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = b.pid, 0, int32(b.offset), true
			}
			var err error
			out, err = record.AppendBatch(out, opts, []record.Record{{Value: []byte(b.value)}})
			if err != nil {
				t.Fatal(err)
			}
		}
		record.SetBaseOffset(out[start:], b.offset)
	}
	return out
}

// Kafka's read_committed algorithm on a crafted fetch: an aborted
// transaction's batches are dropped from its first offset to its ABORT
// marker, the same producer's later transaction is kept, control batches
// are never returned, and the position moves past everything.
func TestAbortedTransactionsFiltered(t *testing.T) {
	data := craftBatches(t, []txnBatch{
		{offset: 0, pid: 1, value: "a0"}, // aborted at 3
		{offset: 1, pid: 2, value: "b1"}, // committed at 4
		{offset: 2, pid: -1, value: "p2"},
		{offset: 3, pid: 1, abort: true},
		{offset: 4, pid: 2},
		{offset: 5, pid: 1, value: "a5"}, // committed at 6
		{offset: 6, pid: 1},
		{offset: 7, pid: 3, value: "c7"}, // aborted at 8
		{offset: 8, pid: 3, abort: true},
	})
	aborted := []kmsg.FetchResponseTopicPartitionAbortedTransaction{
		{ProducerID: 3, FirstOffset: 7}, {ProducerID: 1, FirstOffset: 0}, // any order
	}
	for _, tc := range []struct {
		name   string
		from   int64
		filter *abortedFilter
		want   []string
	}{
		{"read_committed", 0, newAbortedFilter(aborted), []string{"b1", "p2", "a5"}},
		{"read_committed from inside the aborted transaction", 1, newAbortedFilter(aborted), []string{"b1", "p2", "a5"}},
		{"read_uncommitted", 0, nil, []string{"a0", "b1", "p2", "a5", "c7"}},
	} {
		cp := &consumePart{tp: tp{"t", 0}, next: tc.from}
		recs, err := decodeFetched(cp, data, tc.filter)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
		if !slices.Equal(got, tc.want) || cp.next != 9 {
			t.Errorf("%s: read %v up to %d, want %v up to 9", tc.name, got, cp.next, tc.want)
		}
	}
}
