package broker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// TestConcurrentTransactionsBackToBack: many transactional producers,
// whose coordinators are spread over the nodes, run transactions back to
// back over two partitions, commits and aborts mixed, so that markers of
// several transactions share a WriteTxnMarkers and a producer's next
// transaction writes the previous one's Complete state. A read_committed
// consumer sees exactly the committed records.
func TestConcurrentTransactionsBackToBack(t *testing.T) {
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "tx-many", 2, 3)
	const producers, txns, per = 12, 6, 5
	var (
		mu        sync.Mutex // guards committed
		committed []string
		wg        sync.WaitGroup
	)
	for p := range producers {
		cl := c.Client(t, kgo.TransactionalID(fmt.Sprintf("many-%d", p)), kgo.DefaultProduceTopic("tx-many"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		wg.Go(func() {
			for i := range txns {
				commit := (p+i)%3 != 0
				vals := seq(fmt.Sprintf("p%d-t%d", p, i), per)
				if err := transactionErr(cl, commit, vals); err != nil {
					t.Errorf("producer %d, transaction %d: %v", p, i, err)
					return
				}
				if commit {
					mu.Lock()
					committed = append(committed, vals...)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	consumer := c.Client(t, kgo.ConsumeTopics("tx-many"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollValues(t, consumer, len(committed), time.Second)
	slices.Sort(got)
	slices.Sort(committed)
	if !slices.Equal(got, committed) {
		t.Fatalf("read_committed read %d records, want the %d committed: %v", len(got), len(committed), got)
	}
}

// transactionErr is transaction, returning its error.
func transactionErr(p *kgo.Client, commit bool, vals []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		return err
	}
	var recs []*kgo.Record
	for i, v := range vals {
		recs = append(recs, &kgo.Record{Value: []byte(v), Partition: int32(i % 2)})
	}
	if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	return p.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}
