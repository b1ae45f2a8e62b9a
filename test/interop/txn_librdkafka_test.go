package interop

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// TestLibrdkafkaTransactionalProducer: librdkafka's transactional producer
// (python3-confluent-kafka running txn_client.py) commits, aborts and
// commits on a 3-node cluster; franz-go's read_committed consumer reads
// exactly the committed records, in order.
func TestLibrdkafkaTransactionalProducer(t *testing.T) {
	python := confluentPython(t)
	c := testcluster.Start(t, 3)
	createTopic(t, c, "rdkafka-txn", 1, 3)
	cmd := exec.CommandContext(testContext(t), python, "txn_client.py", strings.Join(c.Seeds(), ","), "rdkafka-txn", "rdkafka-tx")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done") {
		t.Fatalf("txn_client.py: %v\n%s", err, out)
	}
	cl := c.Client(t, kgo.ConsumeTopics("rdkafka-txn"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := consume(testContext(t), t, cl, 3)
	if want := []string{"c1", "c2", "c3"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
}
