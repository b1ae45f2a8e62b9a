package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/client"
)

// Transactions of our producer against the in-process 3-node cluster, read
// by our consumer and by franz-go's, under both isolation levels.

const txnParts = 3

// txnProducer makes a transactional producer and calls InitTransactions.
func txnProducer(t *testing.T, seeds []string, id string) *client.Producer {
	t.Helper()
	p, err := client.NewProducer(client.Brokers(seeds...), client.TransactionalID(id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions %s: %v", id, err)
	}
	return p
}

// vals names n records: prefix-0 .. prefix-(n-1).
func vals(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// produceTxn produces values in one transaction, value i to partition
// i mod txnParts, waits for every result, and commits or aborts.
func produceTxn(t *testing.T, p *client.Producer, topic string, commit bool, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	recs := make([]*client.Record, len(values))
	for i, v := range values {
		recs[i] = &client.Record{Topic: topic, Value: []byte(v), ExplicitPartition: true, Partition: int32(i % txnParts)}
	}
	if err := p.ProduceSync(ctx, recs...); err != nil {
		t.Fatalf("produce in a transaction: %v", err)
	}
	end := p.AbortTransaction
	if commit {
		end = p.CommitTransaction
	}
	if err := end(ctx); err != nil {
		t.Fatalf("end the transaction (commit %v): %v", commit, err)
	}
}

// ourValues reads topic with our consumer until it has n values, and
// returns them sorted.
func ourValues(t *testing.T, seeds []string, topic string, n int, iso client.Isolation) []string {
	t.Helper()
	c, err := client.NewConsumer(client.Brokers(seeds...), client.ConsumeTopics(topic), client.IsolationLevel(iso))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []string
	for len(got) < n {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatalf("poll %s (isolation %d) after %d of %d values: %v", topic, iso, len(got), n, err)
		}
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}
	slices.Sort(got)
	return got
}

// kgoCommitted reads topic with franz-go's read_committed consumer until
// it has n values, and returns them sorted.
func kgoCommitted(t *testing.T, seeds []string, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("kgo read %d of %d values: %v", len(got), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	return got
}

func sorted(parts ...[]string) []string {
	out := slices.Concat(parts...)
	slices.Sort(out)
	return out
}

// A committed transaction is read by both read_committed consumers; an
// aborted one (its records written, then aborted) by neither, though a
// read_uncommitted consumer sees it. The last committed transaction puts
// records after the aborted ones in every partition, so a reader that
// has it has passed the aborted ones.
func TestClusterTransactionCommitAndAbort(t *testing.T) {
	c := startCluster(t, map[string]int32{"txn-out": txnParts})
	seeds := c.Seeds()
	p := txnProducer(t, seeds, "txn-commit-abort")
	a, aborted, b := vals("a", 9), vals("aborted", 9), vals("b", 9)
	produceTxn(t, p, "txn-out", true, a...)
	produceTxn(t, p, "txn-out", false, aborted...)
	produceTxn(t, p, "txn-out", true, b...)

	want := sorted(a, b)
	if got := ourValues(t, seeds, "txn-out", len(want), client.ReadCommitted); !slices.Equal(got, want) {
		t.Errorf("our read_committed consumer read %v, want %v", got, want)
	}
	if got := kgoCommitted(t, seeds, "txn-out", len(want)); !slices.Equal(got, want) {
		t.Errorf("kgo's read_committed consumer read %v, want %v", got, want)
	}
	all := sorted(a, aborted, b)
	if got := ourValues(t, seeds, "txn-out", len(all), client.ReadUncommitted); !slices.Equal(got, all) {
		t.Errorf("our read_uncommitted consumer read %v, want %v", got, all)
	}
}

// A second producer with the same transactional id fences the first: the
// first's open transaction is aborted, and its next produce or commit
// fails with the fatal FencedError; nothing of it is read committed.
func TestClusterTransactionZombieFenced(t *testing.T) {
	c := startCluster(t, map[string]int32{"txn-zombie": txnParts})
	seeds := c.Seeds()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := txnProducer(t, seeds, "txn-zombie")
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &client.Record{Topic: "txn-zombie", Value: []byte("zombie-1")}); err != nil {
		t.Fatal(err)
	}

	newer := txnProducer(t, seeds, "txn-zombie") // aborts old's transaction
	err := old.ProduceSync(ctx, &client.Record{Topic: "txn-zombie", Value: []byte("zombie-2")})
	if err == nil {
		err = old.CommitTransaction(ctx)
	}
	var fe *client.FencedError
	if !errors.Is(err, client.ErrProducerFenced) || !errors.As(err, &fe) {
		t.Fatalf("the older producer: %v, want a FencedError", err)
	}
	if err := old.BeginTransaction(); !errors.Is(err, client.ErrProducerFenced) {
		t.Fatalf("the fenced producer begins: %v", err)
	}
	produceTxn(t, newer, "txn-zombie", true, vals("new", 3)...)
	want := vals("new", 3)
	if got := ourValues(t, seeds, "txn-zombie", len(want), client.ReadCommitted); !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want only %v", got, want)
	}
}

// Bad state and abortable errors on the cluster: a Produce to an unknown
// topic fails without touching the transaction; offsets sent for a group
// generation that does not exist make the transaction abortable (Produce
// and CommitTransaction say so); after AbortTransaction the producer
// commits the next transaction.
func TestClusterTransactionAbortableError(t *testing.T) {
	c := startCluster(t, map[string]int32{"txn-err": txnParts})
	seeds := c.Seeds()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := txnProducer(t, seeds, "txn-err")
	if err := p.Produce(ctx, &client.Record{Topic: "txn-err", Value: []byte("x")}, nil); !errors.Is(err, client.ErrTransactionState) {
		t.Fatalf("produce outside a transaction: %v", err)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	err := p.Produce(short, &client.Record{Topic: "txn-no-such-topic", Value: []byte("x")}, nil)
	cancelShort()
	if err == nil {
		t.Fatal("produce to an unknown topic succeeded")
	}
	if err := p.ProduceSync(ctx, &client.Record{Topic: "txn-err", Value: []byte("doomed")}); err != nil {
		t.Fatal(err)
	}
	stranger := client.GroupMetadata{Group: "txn-err-group", Generation: 7, MemberID: "nobody"}
	err = p.SendOffsetsToTransaction(ctx, map[string]map[int32]int64{"txn-err": {0: 1}}, stranger)
	var ae *client.AbortableTxnError
	if !errors.As(err, &ae) || !errors.Is(err, client.ErrAbortRequired) {
		t.Fatalf("offsets of a generation that does not exist: %v, want an AbortableTxnError", err)
	}
	t.Logf("offsets refused: %v", err)
	if err := p.Produce(ctx, &client.Record{Topic: "txn-err", Value: []byte("x")}, nil); !errors.Is(err, client.ErrAbortRequired) {
		t.Fatalf("produce in a transaction that must abort: %v", err)
	}
	if err := p.CommitTransaction(ctx); !errors.Is(err, client.ErrAbortRequired) {
		t.Fatalf("commit of a transaction that must abort: %v", err)
	}
	if err := p.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	kept := vals("kept", txnParts) // one per partition: each is after "doomed"
	produceTxn(t, p, "txn-err", true, kept...)
	if got := ourValues(t, seeds, "txn-err", len(kept), client.ReadCommitted); !slices.Equal(got, kept) {
		t.Fatalf("read_committed read %v, want %v", got, kept)
	}
}

// Consume-transform-produce: a group member reads the input, and one
// transaction writes the output and the group's offsets. Aborted, neither
// the output nor the offsets are visible; committed, both are.
func TestClusterTransactionConsumeTransformProduce(t *testing.T) {
	c := startCluster(t, map[string]int32{"ctp-in": txnParts, "ctp-out": txnParts})
	seeds := c.Seeds()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	in := vals("in", 9)
	plain, err := client.NewProducer(client.Brokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range in {
		r := &client.Record{Topic: "ctp-in", Value: []byte(v), ExplicitPartition: true, Partition: int32(i % txnParts)}
		if err := plain.ProduceSync(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	plain.Close(ctx)

	g, err := client.NewGroupConsumer(client.Brokers(seeds...), client.ConsumerGroup("ctp"),
		client.ConsumeTopics("ctp-in"), client.AutoCommit(false), client.IsolationLevel(client.ReadCommitted))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	var polled []*client.Record
	for len(polled) < len(in) {
		recs, err := g.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d records: %v", len(polled), err)
		}
		polled = append(polled, recs...)
	}
	want := map[int32]int64{}
	for _, r := range polled {
		want[r.Partition] = max(want[r.Partition], r.Offset+1)
	}

	p := txnProducer(t, seeds, "ctp")
	transform(ctx, t, p, g, polled, want, false)
	if got := committedOffsets(ctx, t, seeds, "ctp", "ctp-in"); len(got) != 0 {
		t.Fatalf("offsets %v committed by an aborted transaction", got)
	}
	transform(ctx, t, p, g, polled, want, true)
	// EndTxn answers once the commit is decided; the offsets follow.
	for got := committedOffsets(ctx, t, seeds, "ctp", "ctp-in"); fmt.Sprint(got) != fmt.Sprint(want); got = committedOffsets(ctx, t, seeds, "ctp", "ctp-in") {
		select {
		case <-ctx.Done():
			t.Fatalf("committed offsets %v, want %v", got, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
	var outs []string
	for _, v := range in {
		outs = append(outs, "out-"+v)
	}
	slices.Sort(outs)
	if got := ourValues(t, seeds, "ctp-out", len(outs), client.ReadCommitted); !slices.Equal(got, outs) {
		t.Fatalf("read_committed output %v, want %v", got, outs)
	}
}

// transform writes "out-"+value of each polled record to ctp-out, and the
// group's offsets, in one transaction that it commits or aborts.
func transform(ctx context.Context, t *testing.T, p *client.Producer, g *client.GroupConsumer,
	polled []*client.Record, offsets map[int32]int64, commit bool) {
	t.Helper()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, r := range polled {
		out := &client.Record{Topic: "ctp-out", Value: []byte("out-" + string(r.Value)), ExplicitPartition: true, Partition: r.Partition}
		if err := p.ProduceSync(ctx, out); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.SendOffsetsToTransaction(ctx, map[string]map[int32]int64{"ctp-in": offsets}, g.GroupMetadata()); err != nil {
		t.Fatalf("send offsets: %v", err)
	}
	end := p.AbortTransaction
	if commit {
		end = p.CommitTransaction
	}
	if err := end(ctx); err != nil {
		t.Fatalf("end (commit %v): %v", commit, err)
	}
}

// committedOffsets is the group's committed offsets of topic's partitions.
func committedOffsets(ctx context.Context, t *testing.T, seeds []string, group, topic string) map[int32]int64 {
	t.Helper()
	adm, err := client.NewAdmin(client.Brokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	gos, err := adm.GroupOffsets(ctx, group)
	if err != nil {
		t.Fatalf("group offsets: %v", err)
	}
	got := map[int32]int64{}
	for _, o := range gos {
		if o.Topic == topic && o.Committed >= 0 {
			got[o.Partition] = o.Committed
		}
	}
	return got
}
