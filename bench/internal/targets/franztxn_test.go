package targets

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// nextTxn takes full transactions while records wait, a smaller one after
// the linger, and reports a closed, empty queue.
func TestNextTxn(t *testing.T) {
	q := make(chan txnRecord, 250)
	for i := range 250 {
		q <- txnRecord{partition: i}
	}
	for _, want := range []int{100, 100, 50} {
		start := time.Now()
		recs, ok := nextTxn(q, 100, 20*time.Millisecond)
		if !ok || len(recs) != want {
			t.Fatalf("took %d records (ok %v), want %d", len(recs), ok, want)
		}
		if want == 100 && time.Since(start) > 10*time.Millisecond {
			t.Fatalf("a full transaction waited %v", time.Since(start))
		}
		if want == 50 && time.Since(start) < 20*time.Millisecond {
			t.Fatalf("a partial transaction after %v, before the linger", time.Since(start))
		}
	}
	q <- txnRecord{partition: 1}
	close(q)
	if recs, ok := nextTxn(q, 100, time.Hour); !ok || len(recs) != 1 {
		t.Fatalf("the last record before close: %d, %v", len(recs), ok)
	}
	if _, ok := nextTxn(q, 100, time.Hour); ok {
		t.Fatal("a closed, empty queue gave a transaction")
	}
}

// The transactional target commits every record once, to the partition
// the bench picked: a read_committed consumer reads each of them.
func TestFranzTxnCommitsEveryRecord(t *testing.T) {
	c := testcluster.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(ctx, "tx", 2, 1, nil); err != nil {
		t.Fatal(err)
	}
	tg, err := NewFranzTxn(FranzTxnConfig{Brokers: c.Seeds(), Topic: "tx", Window: 64, IDPrefix: "bench-test",
		Producers: 2, Records: 10})
	if err != nil {
		t.Fatal(err)
	}
	if failed, first := sendAll(t, tg, 250, 2); failed != 0 {
		t.Fatalf("%d failed, first %v", failed, first)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.ConsumeTopics("tx"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	perPart := map[int32]int{}
	for got := 0; got < 250 && ctx.Err() == nil; {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { perPart[r.Partition]++; got++ })
	}
	pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer pcancel()
	cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) { perPart[r.Partition]++ })
	if perPart[0] != 125 || perPart[1] != 125 {
		t.Fatalf("read %v per partition, want 125 in each", perPart)
	}
}
