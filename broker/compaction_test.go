package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/metadata"
)

// __consumer_offsets is compacted: 300 commits of one group's offset
// leave a handful of records in its partition, and after a full restart
// (every view rebuilt from the cleaned log) the group's offset is the last
// one committed.
func TestConsumerOffsetsCompacted(t *testing.T) {
	t.Parallel()
	fast := func(cfg *broker.Config) { cfg.CleanerBackoff = 200 * time.Millisecond }
	c := testcluster.Start(t, 3, fast)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "oc"); err != nil {
		t.Fatal(err)
	}
	const commits = 300
	for i := range int64(commits) {
		commitSimple(t, adm, "compacted-group", "oc", i+1)
	}
	described, err := adm.DescribeTopicConfigs(ctx, metadata.ConsumerOffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := described.On(metadata.ConsumerOffsetsTopic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	policy := ""
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" {
			policy = c.MaybeValue()
		}
	}
	if policy != "compact" {
		t.Fatalf("%s's cleanup.policy is described as %q, want compact", metadata.ConsumerOffsetsTopic, policy)
	}
	parts, _ := c.Running()[0].MetadataState().TopicPartitions(metadata.ConsumerOffsetsTopic)
	p := metadata.GroupPartition("compacted-group", parts)
	eventually(t, time.Minute, "the group's commits cleaned away", func() bool {
		return countRecords(ctx, t, c, metadata.ConsumerOffsetsTopic, p) <= 3
	})

	restartAll(t, c, 3, fast)
	eventually(t, 30*time.Second, "the offset served after the restart", func() bool {
		offsets, err := adm.FetchOffsets(ctx, "compacted-group")
		if err != nil || offsets.Error() != nil {
			return false
		}
		o, ok := offsets.Lookup("oc", 0)
		if ok && o.At != commits {
			t.Fatalf("after the restart the group's offset is %d, want %d", o.At, commits)
		}
		return ok
	})
}

// countRecords reads partition p of topic from the start until a poll of
// a second finds nothing more, and returns how many records it read.
func countRecords(ctx context.Context, t *testing.T, c *testcluster.Cluster, topic string, p int32) int {
	t.Helper()
	cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	n := 0
	for empty := 0; empty < 2; {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		got := 0
		fs.EachRecord(func(*kgo.Record) { got++ })
		if n += got; got == 0 {
			empty++
		}
	}
	return n
}

// A log cleaned once and then only a little dirtier stays below
// min.cleanable.dirty.ratio and is not cleaned again, until
// max.compaction.lag.ms makes its oldest dirty record overdue.
func TestMaxCompactionLag(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.CleanerBackoff = 100 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	cfgs := map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "min.cleanable.dirty.ratio": kadm.StringPtr("0.9")}
	if resp, err := adm.CreateTopic(ctx, 1, 1, cfgs, "lag"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	p := c.Client(t, kgo.DefaultProduceTopic("lag"))
	produce := func(keys ...string) {
		t.Helper()
		var recs []*kgo.Record
		for _, k := range keys {
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("v")})
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for k := range 200 {
		keys = append(keys, fmt.Sprintf("k%03d", k), "k000")
	}
	produce(keys...)
	eventually(t, 30*time.Second, "the first cleaning", func() bool { return countRecords(ctx, t, c, "lag", 0) == 200 })
	produce("k001", "k001", "k001")
	time.Sleep(time.Second) // ten passes of the cleaner
	if n := countRecords(ctx, t, c, "lag", 0); n != 203 {
		t.Fatalf("a log 1.5%% dirty under min.cleanable.dirty.ratio=0.9 holds %d records, want 203 (not cleaned)", n)
	}
	alter := []kadm.AlterConfig{{Name: "max.compaction.lag.ms", Value: kadm.StringPtr("500")}}
	if resps, err := adm.AlterTopicConfigs(ctx, alter, "lag"); err != nil || resps[0].Err != nil {
		t.Fatalf("alter: %v %v", err, resps)
	}
	eventually(t, 30*time.Second, "the overdue records cleaned", func() bool { return countRecords(ctx, t, c, "lag", 0) == 200 })
}

// A partition with more keys to clean than a cleaning's map holds
// (log_cleaner_dedupe_buffer_size) is cleaned in passes, each mapping
// the keys from where the last ended, until one record of each key is
// left, the same bytes on every replica. Before, every cleaning mapped
// the log from its start under a fixed bound, so a log whose live part
// passed it was never cleaned past it.
func TestCompactionBeyondOneMap(t *testing.T) {
	t.Parallel()
	c := startSmallMaps(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	// Any ratio above 0 may leave a last dirty part uncleaned, as in Kafka:
	// under 0.5, a log whose clean part ends where a version starts is
	// 0.4995 dirty. The test wants every duplicate gone.
	cfgs := map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("1048576"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0")}
	if resp, err := adm.CreateTopic(ctx, 1, 3, cfgs, "many-keys"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	const keys = 30000
	produceVersions(ctx, t, c, "many-keys", keys, 3)
	eventually(t, 2*time.Minute, "one record of each key", func() bool { return countRecords(ctx, t, c, "many-keys", 0) == keys })
	eventually(t, time.Minute, "the same bytes on every replica", sameBytes(c, "many-keys"))
	// 90,000 offsets, each pass mapping about 14,000 of them.
	if runs, _ := c.Running()[0].ReplicaCleanings("many-keys", 0); runs < 6 {
		t.Fatalf("%d cleanings, want a pass for each 14,000 keys", runs)
	} else {
		t.Logf("%d cleanings", runs)
	}
}

// produceVersions writes versions records of each of keys keys to topic's
// partition 0, in batches of at most 16 KiB (a map may pass its bound by
// a batch).
func produceVersions(ctx context.Context, t *testing.T, c *testcluster.Cluster, topic string, keys, versions int) {
	t.Helper()
	p := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(16<<10))
	for v := range versions {
		var recs []*kgo.Record
		for k := range keys {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%05d", k), Value: fmt.Appendf(nil, "version %d", v)})
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// sameBytes reports whether every running node holds the same bytes in
// its replica of topic's partition 0.
func sameBytes(c *testcluster.Cluster, topic string) func() bool {
	return func() bool {
		var first []byte
		for i, n := range c.Running() {
			log, _, ok := n.ReplicaLog(topic, 0)
			if !ok || i > 0 && !bytes.Equal(log, first) {
				return false
			}
			first = log
		}
		return true
	}
}

// While a node gossips a build that refuses the cleanings of a dirty part
// (an older one, mid rolling upgrade), leaders propose cleanings of whole
// ranges, which every build applies: no cleaning's map is bounded, and the
// replicas stay the same. Once it gossips this build, cleanings map dirty
// parts under the bound again. Before, an older node refused every
// cleaning and its replica diverged from the others.
func TestCompactionWithAnOlderBuild(t *testing.T) {
	t.Parallel()
	c := startSmallMaps(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nodes := c.Running()
	gossip := func(dirtyPart bool) {
		if err := nodes[2].GossipCleanerBuild(ctx, dirtyPart); err != nil {
			t.Fatal(err)
		}
		var older []int32
		if !dirtyPart {
			older = []int32{nodes[2].ID()}
		}
		eventually(t, 30*time.Second, "the gossiped build seen", func() bool {
			return slices.Equal(nodes[0].OlderCleaners(), older) && slices.Equal(nodes[1].OlderCleaners(), older)
		})
	}
	adm := kadm.NewClient(c.Client(t))
	// 30,000 keys written under cleanup.policy=delete, then compacted: the
	// first cleaning finds them all dirty, twice what one map holds.
	cleanUp := func(keys int) (mapFull int) {
		set := func(policy string) {
			alter(t, ctx, adm.AlterTopicConfigs, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr(policy)}}, "mixed")
		}
		set("delete")
		produceVersions(ctx, t, c, "mixed", 30000, 2)
		set("compact")
		eventually(t, 2*time.Minute, "one record of each key", func() bool { return countRecords(ctx, t, c, "mixed", 0) == keys })
		eventually(t, time.Minute, "the same bytes on every replica", sameBytes(c, "mixed"))
		for _, n := range nodes {
			_, st := n.ReplicaCleanings("mixed", 0)
			mapFull += st.MapFull
		}
		return mapFull
	}
	cfgs := map[string]*string{"min.cleanable.dirty.ratio": kadm.StringPtr("0")}
	if resp, err := adm.CreateTopic(ctx, 1, 3, cfgs, "mixed"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	gossip(false)
	if full := cleanUp(30000); full != 0 {
		t.Fatalf("with a node of an older build, %d cleanings were bounded", full)
	}
	gossip(true)
	if full := cleanUp(30000); full == 0 {
		t.Fatal("with every node on this build, no cleaning was bounded")
	}
}

// startSmallMaps starts three nodes whose leaders look for cleaning work
// every 100 ms and map about 14,000 keys of 9 bytes a cleaning (1 MiB).
func startSmallMaps(t *testing.T) *testcluster.Cluster {
	return testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.CleanerBackoff = 100 * time.Millisecond
		cfg.CleanerDedupeBufferSize = 1 << 20
	})
}
