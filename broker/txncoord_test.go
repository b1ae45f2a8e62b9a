package broker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// transaction runs one transaction of a franz-go transactional producer:
// values produced, then committed or aborted.
func transaction(t *testing.T, p *kgo.Client, commit bool, vals ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// TestFranzGoTransactionalProducer: franz-go's transactional producer
// (FindCoordinator for transactions, InitProducerId, AddPartitionsToTxn,
// EndTxn) commits and aborts transactions over three partitions of a
// 3-node cluster; a read_committed consumer sees exactly the committed
// records, a read_uncommitted one every record.
func TestFranzGoTransactionalProducer(t *testing.T) {
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "tx-out", 3, 3)
	p := c.Client(t, kgo.TransactionalID("tx-producer"), kgo.DefaultProduceTopic("tx-out"))
	transaction(t, p, true, seq("commit-a", 10)...)
	transaction(t, p, false, seq("abort", 10)...)
	transaction(t, p, true, seq("commit-b", 5)...)

	committed := c.Client(t, kgo.ConsumeTopics("tx-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollValues(t, committed, 15, time.Second)
	slices.Sort(got)
	want := append(seq("commit-a", 10), seq("commit-b", 5)...)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
	uncommitted := c.Client(t, kgo.ConsumeTopics("tx-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := pollValues(t, uncommitted, 25, 500*time.Millisecond); len(got) != 25 {
		t.Fatalf("read_uncommitted read %d records, want 25", len(got))
	}
}

// TestZombieProducerIsFenced: a second instance with the same
// transactional id fences the first: the first's open transaction is
// aborted, its later sends and its commit fail with PRODUCER_FENCED (or
// INVALID_PRODUCER_EPOCH), and none of its records becomes visible.
func TestZombieProducerIsFenced(t *testing.T) {
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "zombie", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old := c.Client(t, kgo.TransactionalID("zombie-tx"), kgo.DefaultProduceTopic("zombie"))
	transaction(t, old, true, "old-committed")
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Value: []byte("old-open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	fresh := c.Client(t, kgo.TransactionalID("zombie-tx"), kgo.DefaultProduceTopic("zombie"))
	transaction(t, fresh, true, "new-committed") // its InitProducerId aborts old's transaction

	err := old.ProduceSync(ctx, &kgo.Record{Value: []byte("old-after")}).FirstErr()
	if err == nil {
		err = old.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the zombie's send and commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	_ = old.EndTransaction(ctx, kgo.TryAbort)

	reader := c.Client(t, kgo.ConsumeTopics("zombie"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollValues(t, reader, 2, time.Second)
	if want := []string{"old-committed", "new-committed"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
	for _, v := range got {
		if strings.HasPrefix(v, "old-") && v != "old-committed" {
			t.Fatalf("a zombie's record is visible: %s", v)
		}
	}
}
