package broker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// TestConcurrentTransactionsBackToBack: many transactional producers,
// whose coordinators are spread over the nodes, run transactions back to
// back over two partitions, commits and aborts mixed, so that markers of
// several transactions share a WriteTxnMarkers and a producer's next
// transaction writes the previous one's Complete state. A read_committed
// consumer sees exactly the committed records.
func TestConcurrentTransactionsBackToBack(t *testing.T) {
	t.Parallel()
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

// TestTransactionsV2BackToBackNeverRetried: transactions-v2 producers
// (franz-go's default: no AddPartitionsToTxn; each partition's leader adds
// it to the transaction with the coordinator) run transactions back to
// back over partitions led by every node, while their coordinators are
// spread over the nodes too. No Produce of theirs may need a retry: a
// producer's next transaction waits at its coordinator for the previous
// one's markers, and those must not queue behind such waits on another
// node. They did, on one connection between two nodes, and each node
// could hold the other's markers until the coordinator gave up
// (CONCURRENT_TRANSACTIONS after 500 ms); franz-go then refreshes its
// metadata before it retries, at most every MetadataMinAge (5s by default;
// 10 ms here so that the test sees each retry as a Metadata request).
func TestTransactionsV2BackToBackNeverRetried(t *testing.T) {
	// Not parallel: beside other clusters leaders moved, and each move is a
	// retry (LEADER_NOT_AVAILABLE).
	c := testcluster.Start(t, 3)
	admin := c.Client(t)
	createTopic(t, admin, "tx-v2", 6, 3)
	waitPreferredLeaders(t, admin, "tx-v2") // else a leader moved by the rebalance is a retry
	const producers, txns, per = 8, 6, 24
	var wg sync.WaitGroup
	for p := range producers {
		kc := &keyCounter{}
		cl := c.Client(t, kgo.TransactionalID(fmt.Sprintf("v2-%d", p)), kgo.DefaultProduceTopic("tx-v2"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(10*time.Millisecond), kgo.WithHooks(kc))
		wg.Go(func() {
			var before int
			for i := range txns {
				if err := spreadTransaction(cl, 6, seq(fmt.Sprintf("p%d-t%d", p, i), per)); err != nil {
					t.Errorf("producer %d, transaction %d: %v", p, i, err)
					return
				}
				if i == 0 { // the first produced to the topic loads its metadata
					before = kc.count(kmsg.Metadata)
				}
			}
			if n := kc.count(kmsg.Metadata) - before; n > 0 {
				t.Errorf("producer %d retried Produce requests: %d metadata refreshes in %d transactions after its first", p, n, txns-1)
			}
		})
	}
	wg.Wait()
}

// spreadTransaction commits vals in one transaction, round robin over
// partitions 0..parts-1.
func spreadTransaction(cl *kgo.Client, parts int, vals []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	recs := make([]*kgo.Record, len(vals))
	for i, v := range vals {
		recs[i] = &kgo.Record{Value: []byte(v), Partition: int32(i % parts)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	return cl.EndTransaction(ctx, kgo.TryCommit)
}

// waitPreferredLeaders waits until each partition of topic is led by its
// first replica, where the leader rebalance leaves it.
func waitPreferredLeaders(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	eventually(t, time.Minute, "every partition led by its preferred replica", func() bool {
		td, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
		if err != nil || td[topic].Err != nil || len(td[topic].Partitions) == 0 {
			return false
		}
		for _, p := range td[topic].Partitions {
			if p.Err != nil || len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
				return false
			}
		}
		return true
	})
}
