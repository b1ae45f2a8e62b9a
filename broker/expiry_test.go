package broker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// rawProduce sends one idempotent batch of producer pid (epoch 0) with
// sequence seq to the partition's leader and returns the partition's error.
func rawProduce(t *testing.T, c *testcluster.Cluster, cl *kgo.Client, topic string, pid int64, seq int32) error {
	t.Helper()
	leader, _ := c.Leader(topic, 0, 10*time.Second)
	return produceTo(t, cl, leader, topic, pid, seq, "v", 15*time.Second)
}

// TestProducerExpiryOnEveryReplica: with producer.id.expiration.ms of 2 s,
// an idle producer is forgotten by the leader's decision on every
// replica: a retry of its last batch, a duplicate until then, becomes out
// of order, a fresh start at sequence 0 is taken, and after a leader kill
// the new leader knows the fresh start, not the old history.
func TestProducerExpiryOnEveryReplica(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.ProducerIDExpirationMs = 2000
		cfg.ProducerExpirationCheckInterval = 100 * time.Millisecond
	})
	cl := c.Client(t)
	createTopic(t, cl, "expiry", 1, 3)
	const pid = 4242
	for seq := range int32(2) {
		if err := rawProduce(t, c, cl, "expiry", pid, seq); err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
	}
	if err := rawProduce(t, c, cl, "expiry", pid, 1); err != nil {
		t.Fatalf("a retry of the last batch before expiry: %v, want a duplicate (no error)", err)
	}
	eventually(t, 20*time.Second, "the producer is forgotten", func() bool {
		return errors.Is(rawProduce(t, c, cl, "expiry", pid, 1), kerr.OutOfOrderSequenceNumber)
	})
	if err := rawProduce(t, c, cl, "expiry", pid, 0); err != nil {
		t.Fatalf("a fresh start at sequence 0: %v", err)
	}
	leader, _ := c.Leader("expiry", 0, 10*time.Second)
	c.HaltNode(int(leader))
	eventually(t, 20*time.Second, "the new leader takes sequence 1 after the fresh start", func() bool {
		err := rawProduce(t, c, cl, "expiry", pid, 1)
		return err == nil || errors.Is(err, kerr.DuplicateSequenceNumber)
	})
}
