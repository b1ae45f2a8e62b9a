package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/multiraft"
)

// With raft.log_store pebble, a cluster keeps each node's partition logs
// in data_dir/raftlog, takes write.caching on every replica, serves every
// record after a node's crash and restart, and a deleted topic's replicas
// go, keys and dirs.
func TestPebbleLogStoreCluster(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.PartitionLogStore = multiraft.LogStorePebble })
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "peb", 2, 3)
	produceSpread(t, cl, "peb", 2, 5, "a")
	replicaDirs := func(node int) []string {
		dirs, _ := filepath.Glob(filepath.Join(c.DataDir(node), "partitions", "peb-*"))
		return dirs
	}
	for node := 1; node <= 3; node++ {
		if !multiraft.HasState(filepath.Join(c.DataDir(node), "partitions", "peb-0")) {
			t.Fatalf("node %d: no raft state in peb-0", node)
		}
		if _, err := os.Stat(filepath.Join(c.DataDir(node), "raftlog")); err != nil {
			t.Fatalf("node %d: %v", node, err)
		}
	}
	// write.caching: the pebble store takes it on every replica.
	adm := kadm.NewClient(cl)
	createWithConfigs(t, adm, "pebwc", map[string]*string{"write.caching": kmsg.StringPtr("true")})
	for _, n := range c.Running() {
		eventually(t, 10*time.Second, fmt.Sprintf("node %d caches pebwc/0", n.ID()), func() bool {
			flush, cached, _ := n.WriteCaching("pebwc", 0)
			return cached && flush == 100*time.Millisecond
		})
	}
	produceSpread(t, cl, "pebwc", 1, 5, "c")
	c.HaltNode(3)
	c.StartNode(3)
	c.WaitReady()
	produceSpread(t, cl, "peb", 2, 5, "b")
	if got := consumeAll(t, c.Seeds(), "peb", 20); len(got) != 20 {
		t.Fatalf("%d records after node 3's restart, want 20", len(got))
	}
	if got := consumeAll(t, c.Seeds(), "pebwc", 5); len(got) != 5 {
		t.Fatalf("%d cached records after node 3's restart, want 5", len(got))
	}
	eventually(t, 30*time.Second, "delete accepted", func() bool {
		resp, err := adm.DeleteTopics(t.Context(), "peb")
		return err == nil && resp["peb"].Err == nil
	})
	eventually(t, 15*time.Second, "every node removed its replicas", func() bool {
		return len(replicaDirs(1)) == 0 && len(replicaDirs(2)) == 0 && len(replicaDirs(3)) == 0
	})
}
