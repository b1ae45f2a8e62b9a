package broker_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// BenchmarkTransactions measures franz-go producers on a 3-node cluster,
// each op a transaction of 100 records of 1 KiB, against the same
// producers without transactions (idempotent: 100 records, then a Flush)
// in the same run: the issue-15 cost, without the bench's processes.
// 16 producers (on 2 CPUs) run in parallel, each with its own transactional id.
func BenchmarkTransactions(b *testing.B) {
	c := testcluster.Start(b, 3)
	admin := c.Client(b)
	createTopic(b, admin, "txn-bench", 3, 3)
	value := make([]byte, 1024)
	var next atomic.Int64
	run := func(b *testing.B, txn bool) {
		// The clients are made and warmed up (a producer id, and for
		// transactions a first commit that creates __transaction_state and
		// loads the coordinators) before the clock starts.
		par := max(1, 16/runtime.GOMAXPROCS(0)) // RunParallel runs par goroutines per CPU
		producers := par * runtime.GOMAXPROCS(0)
		clients := make(chan *kgo.Client, producers)
		for range producers {
			opts := []kgo.Opt{kgo.SeedBrokers(c.Seeds()...), kgo.DefaultProduceTopic("txn-bench"), kgo.RequestRetries(200)}
			if txn {
				opts = append(opts, kgo.TransactionalID(fmt.Sprintf("bench-%d", next.Add(1))))
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			eventually(b, 3*time.Minute, "a first batch", func() bool { return oneBatch(context.Background(), cl, txn, value[:1]) == nil })
			clients <- cl
		}
		b.SetParallelism(par)
		b.SetBytes(100 * 1024)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			cl := <-clients
			for pb.Next() {
				if err := oneBatch(context.Background(), cl, txn, value); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)*100/b.Elapsed().Seconds(), "records/s")
	}
	b.Run("idempotent", func(b *testing.B) { run(b, false) })
	b.Run("transactional", func(b *testing.B) { run(b, true) })
}

// oneBatch produces 100 records and waits for them: in a committed
// transaction when txn is set.
func oneBatch(ctx context.Context, cl *kgo.Client, txn bool, value []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if txn {
		if err := cl.BeginTransaction(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
	}
	var failed atomic.Pointer[error]
	for range 100 {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := failed.Load(); err != nil {
		return fmt.Errorf("produce: %w", *err)
	}
	if txn {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	return nil
}
