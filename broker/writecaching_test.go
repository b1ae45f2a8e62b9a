package broker_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/internal/testlog"
	"github.com/minikafka/minikafka-go/multiraft"
)

// refusal is the start of the message a replica logs when its store
// cannot cache writes.
const refusal = "write caching asked for, but"

// everyReplicaFlushes waits until every running node's replica of
// topic/0 has given its Raft group flush, and checks that the boltdb
// store, which always fsyncs, did not take it.
func everyReplicaFlushes(t *testing.T, c *testcluster.Cluster, topic string, flush time.Duration) {
	t.Helper()
	for _, n := range c.Running() {
		var got time.Duration
		var set bool
		eventually(t, 10*time.Second, fmt.Sprintf("node %d: %s/0 flush %v", n.ID(), topic, flush), func() bool {
			var cached bool
			got, cached, set = n.WriteCaching(topic, 0)
			if cached {
				t.Fatalf("node %d: the boltdb store took write caching", n.ID())
			}
			return set && got == flush
		})
	}
}

// write.caching reaches the Raft group of every replica, followers too:
// set when the topic is created, changed with its flush.ms, turned off,
// turned on by a cluster-wide default (which leaves __consumer_offsets
// alone), set again when a node restarts, and off with the node's static
// default once the cluster default is deleted. DescribeConfigs shows what the user set although the boltdb
// store refuses to cache, which each replica logs once.
func TestWriteCachingReachesEveryReplica(t *testing.T) {
	t.Parallel()
	logs := &testlog.Buffer{}
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.PartitionLogStore = multiraft.LogStoreBoltDB
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	createWithConfigs(t, adm, "wc", map[string]*string{"write.caching": kmsg.StringPtr("true")})
	everyReplicaFlushes(t, c, "wc", 100*time.Millisecond) // the static log.flush.interval.ms
	everyNodeSays(t, cl, "wc", "write.caching", "true", kmsg.ConfigSourceDynamicTopicConfig)
	everyNodeSays(t, cl, "wc", "flush.ms", "100", kmsg.ConfigSourceStaticBrokerConfig)

	alter(t, ctx, adm.AlterTopicConfigs, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "flush.ms", Value: kmsg.StringPtr("250")}}, "wc")
	everyReplicaFlushes(t, c, "wc", 250*time.Millisecond)

	alter(t, ctx, adm.AlterTopicConfigs, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "write.caching", Value: kmsg.StringPtr("false")}}, "wc")
	everyReplicaFlushes(t, c, "wc", 0)
	everyNodeSays(t, cl, "wc", "write.caching", "false", kmsg.ConfigSourceDynamicTopicConfig)

	// AlterConfigs drops every override; the cluster default turns it on.
	alter(t, ctx, adm.AlterBrokerConfigs, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "write.caching.default", Value: kmsg.StringPtr("true")}})
	alter(t, ctx, adm.AlterTopicConfigsState, nil, "wc")
	everyReplicaFlushes(t, c, "wc", 100*time.Millisecond)
	everyNodeSays(t, cl, "wc", "write.caching", "true", kmsg.ConfigSourceDynamicDefaultBrokerConfig)

	// Committed offsets stay fsync-on-commit under the cluster default.
	eventually(t, 20*time.Second, "__consumer_offsets created", func() bool {
		return adm.FindGroupCoordinators(ctx, "g").Ok()
	})
	everyReplicaFlushes(t, c, "__consumer_offsets", 0)

	c.StopNode(2)
	c.StartNode(2)
	c.WaitReady()
	everyReplicaFlushes(t, c, "wc", 100*time.Millisecond)

	// Without the cluster default the node's static one (false) rules.
	cl = c.Client(t) // node 2 is a new process
	adm = kadm.NewClient(cl)
	alter(t, ctx, adm.AlterBrokerConfigs, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "write.caching.default"}})
	everyReplicaFlushes(t, c, "wc", 0)
	everyNodeSays(t, cl, "wc", "write.caching", "false", kmsg.ConfigSourceStaticBrokerConfig)

	// Once per replica: three replicas, the restarted one logs again.
	if n := strings.Count(logs.String(), refusal); n != 4 {
		t.Fatalf("the refusal to cache was logged %d times, want 4 (once per replica, once more on restart):\n%s", n, logs)
	}
}
