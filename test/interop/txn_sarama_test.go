package interop

import (
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// TestSaramaTransactionalProducer: sarama's transactional SyncProducer
// (its own FindCoordinator, InitProducerId, AddPartitionsToTxn and EndTxn
// versions) commits, aborts and commits on a 3-node cluster; franz-go's
// read_committed consumer reads exactly the committed records, in order.
func TestSaramaTransactionalProducer(t *testing.T) {
	c := testcluster.Start(t, 3)
	createTopic(t, c, "sarama-txn", 1, 3)
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "sarama-tx"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.Retry.Max = 50
	cfg.Producer.Transaction.Retry.Backoff = 100 * time.Millisecond
	p, err := sarama.NewSyncProducer(c.Seeds(), cfg)
	if err != nil {
		t.Fatalf("sarama transactional producer: %v", err)
	}
	defer p.Close()
	txn := func(commit bool, values ...string) {
		t.Helper()
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		var msgs []*sarama.ProducerMessage
		for _, v := range values {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: "sarama-txn", Value: sarama.StringEncoder(v)})
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("send in a transaction: %v", err)
		}
		end := p.AbortTxn
		if commit {
			end = p.CommitTxn
		}
		if err := end(); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	txn(true, "c1", "c2", "c3")
	txn(false, "a1", "a2")
	txn(true, "c4")

	cl := c.Client(t, kgo.ConsumeTopics("sarama-txn"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := consume(testContext(t), t, cl, 4)
	if want := []string{"c1", "c2", "c3", "c4"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
}
