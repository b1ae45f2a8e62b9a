// Package interop checks the node against Kafka clients we did not write:
// franz-go (kgo, kadm) in process, and librdkafka through Debian's kcat
// when it is installed (the tests that need it skip otherwise).
//
// Client quotas: TestLibrdkafkaThrottled with quota_client.py.
//
// Transactions: TestSaramaTransactionalProducer, and
// TestLibrdkafkaTransactionalProducer with txn_client.py.
//
// TestGroupClients is the group suite: franz-go, sarama and kafka-go in
// process, librdkafka (python3-confluent-kafka) and kafkajs as child
// processes running group_client.py and group_client.js, each producing
// and consuming through a group. `make test-deps` installs the non-Go
// clients. It runs against our 3-node cluster by default, or against
// franz-go's kfake with MINIKAFKA_INTEROP_TARGET=kfake (see targetEnv).
package interop

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testcluster.GoleakOptions()...)
}

// timeout bounds each test's client calls so that a bug fails the test
// instead of hanging it.
const timeout = 60 * time.Second

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates a topic with kadm and waits until every partition
// has a leader.
func createTopic(t *testing.T, c *testcluster.Cluster, name string, partitions int32, rf int16) {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	resp, err := adm.CreateTopic(testContext(t), partitions, rf, nil, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
	for p := range partitions {
		if leader, _ := c.Leader(name, p, timeout); leader < 0 {
			t.Fatalf("%s/%d has no leader", name, p)
		}
	}
}

// produce writes values to one partition and returns their offsets.
func produce(t *testing.T, cl *kgo.Client, topic string, partition int32, values ...string) []int64 {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)})
	}
	var offsets []int64
	for _, r := range cl.ProduceSync(testContext(t), recs...) {
		if r.Err != nil {
			t.Fatalf("produce to %s/%d: %v", topic, partition, r.Err)
		}
		offsets = append(offsets, r.Record.Offset)
	}
	return offsets
}

// requireKcat returns kcat's path or skips the test.
func requireKcat(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (Debian: apt-get install kcat); librdkafka interop is not checked")
	}
	return path
}
