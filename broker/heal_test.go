package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A node gone longer than node_unavailable_timeout is replaced without
// operator action: every partition it held is back to three replicas on
// the live nodes, no record is lost, and when the node comes back with
// its old data it removes its stale replicas.
func TestGoneNodeIsReplaced(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 4, func(cfg *broker.Config) {
		cfg.DefaultReplicationFactor = 3
		cfg.NodeUnavailableTimeout = 2 * time.Second
	})
	cl := c.Client(t)
	const topic, parts = "healing", 4
	createTopic(t, cl, topic, parts, 3)
	recs := values(200, "h")
	for _, r := range recs {
		r.Topic = topic
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	md := metadataOf(t, cl, topic)
	gone := int32(-1)
	for id := int32(1); id <= 4 && gone < 0; id++ {
		for _, p := range md {
			if slices.Contains(p.replicas, id) {
				gone = id
			}
		}
	}
	held := 0
	for _, p := range md {
		if slices.Contains(p.replicas, gone) {
			held++
		}
	}
	t.Logf("halting node %d, which holds %d of %d partitions", gone, held, parts)
	c.HaltNode(int(gone))

	var live []string
	for _, nd := range c.Running() {
		live = append(live, nd.KafkaAddr())
	}
	lcl, err := kgo.NewClient(kgo.SeedBrokers(live...))
	if err != nil {
		t.Fatal(err)
	}
	defer lcl.Close()
	adm := kadm.NewClient(lcl)
	eventually(t, 60*time.Second, "every partition back to three live replicas", func() bool {
		moving, err := adm.ListPartitionReassignments(context.Background(), kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}, 3: {}}})
		if err != nil || len(moving.Sorted()) > 0 {
			return false
		}
		for _, p := range metadataOf(t, lcl, topic) {
			if len(p.replicas) != 3 || slices.Contains(p.replicas, gone) {
				return false
			}
		}
		return true
	})
	if recs := consumeAll(t, live, topic, 200); len(recs) != 200 {
		t.Fatalf("read %d records", len(recs))
	}

	// The node returns with its old data: its copies go.
	c.StartNode(int(gone))
	eventually(t, 60*time.Second, "the returning node to remove its stale replicas", func() bool {
		for p := range parts {
			_, err := os.Stat(filepath.Join(c.DataDir(int(gone)), "partitions", topic+"-"+strconv.Itoa(p)))
			if !errors.Is(err, os.ErrNotExist) {
				return false
			}
		}
		return true
	})
}
