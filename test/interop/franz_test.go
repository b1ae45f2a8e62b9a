package interop

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// franz-go's admin client describes the cluster, a topic's configs and
// the broker's configs, as kadm parses them.
func TestKadmDescribes(t *testing.T) {
	c := testcluster.Start(t, 1)
	createTopic(t, c, "described", 1, 1)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	ctx := testContext(t)

	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil || dc.ErrorCode != 0 || dc.ControllerID != 1 || len(dc.Brokers) != 1 || dc.ClusterID == "" {
		t.Fatalf("DescribeCluster: %v %+v", err, dc)
	}

	topics, err := adm.DescribeTopicConfigs(ctx, "described", "missing")
	if err != nil {
		t.Fatal(err)
	}
	got, err := topics.On("described", nil)
	if err != nil || got.Err != nil {
		t.Fatalf("described: %v %v", err, got.Err)
	}
	want := map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"segment.bytes":          {"1048576", kmsg.ConfigSourceStaticBrokerConfig},   // testcluster's segment size
		"retention.ms":           {"604800000", kmsg.ConfigSourceStaticBrokerConfig}, // the node's log_retention_ms
		"cleanup.policy":         {"delete", kmsg.ConfigSourceDefaultConfig},
		"message.timestamp.type": {"CreateTime", kmsg.ConfigSourceDefaultConfig},
	}
	seen := 0
	for _, cfg := range got.Configs {
		if w, ok := want[cfg.Key]; ok {
			seen++
			if cfg.Value == nil || *cfg.Value != w.value || cfg.Source != w.source {
				t.Errorf("%s = %v from %v, want %s from %v", cfg.Key, cfg.Value, cfg.Source, w.value, w.source)
			}
		}
	}
	if seen != len(want) {
		t.Fatalf("found %d of %d configs in %+v", seen, len(want), got.Configs)
	}
	if missing, _ := topics.On("missing", nil); missing.Err == nil {
		t.Fatal("an unknown topic has configs")
	}

	brokers, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := brokers.On("1", nil)
	cfgs := map[string]string{}
	for _, cfg := range b.Configs {
		cfgs[cfg.Key] = *cfg.Value
	}
	if b.Err != nil || cfgs["broker.id"] != "1" || cfgs["num.partitions"] != "1" || cfgs["log.segment.bytes"] != "1048576" {
		t.Fatalf("broker configs: %v %v", b.Err, cfgs)
	}
}

// epochEnds asks the partition's leader for the end of each epoch.
func epochEnds(t *testing.T, adm *kadm.Client, topic string, epochs ...int32) []kadm.OffsetForLeaderEpoch {
	t.Helper()
	var out []kadm.OffsetForLeaderEpoch
	for _, e := range epochs {
		var req kadm.OffsetForLeaderEpochRequest
		req.Add(topic, 0, e)
		var got kadm.OffsetForLeaderEpoch
		// Right after a leader change the client may still ask the old
		// leader; retry until the new one answers.
		deadline := time.Now().Add(timeout)
		for {
			resp, err := adm.OffsetForLeaderEpoch(testContext(t), req)
			got = resp[topic][0]
			if err == nil && got.Err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("OffsetForLeaderEpoch(%d): %v %v", e, err, got.Err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		out = append(out, got)
	}
	return out
}

// After leader changes, OffsetForLeaderEpoch answers Kafka's end offsets
// for each epoch that wrote data, the same from every leader and after a
// full restart; and a franz-go consumer that consumed under the first
// leader (it validates its position with OffsetForLeaderEpoch, KIP-320)
// carries on without errors.
func TestOffsetForLeaderEpochAcrossLeaderChanges(t *testing.T) {
	c := testcluster.Start(t, 3)
	createTopic(t, c, "epochs", 1, 3)
	producer := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	consumer := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"epochs": {0: kgo.NewOffset().AtStart()}}))
	ctx := testContext(t)

	leader1, epoch1 := c.Leader("epochs", 0, timeout)
	produce(t, producer, "epochs", 0, "a", "b", "c")
	consumed := consume(ctx, t, consumer, 3)

	c.StopNode(int(leader1)) // hands leadership over
	leader2, epoch2 := c.Leader("epochs", 0, timeout)
	if leader2 < 0 || epoch2 <= epoch1 {
		t.Fatalf("after stopping %d: leader %d epoch %d (was %d)", leader1, leader2, epoch2, epoch1)
	}
	produce(t, producer, "epochs", 0, "d", "e")
	consumed = append(consumed, consume(ctx, t, consumer, 2)...)
	if len(consumed) != 5 || consumed[4] != "e" {
		t.Fatalf("consumed %q", consumed)
	}

	adm := kadm.NewClient(c.Client(t))
	check := func(what string) {
		t.Helper()
		got := epochEnds(t, adm, "epochs", epoch1-1, epoch1, epoch2-1, epoch2, epoch2+1)
		want := []struct {
			epoch int32
			end   int64
		}{
			{epoch1 - 1, 0}, // before any data: the start of epoch1's data
			{epoch1, 3},     // epoch1 ends where epoch2's data starts
			{epoch1, 3},     // an epoch without data: the one before it
			{epoch2, 5},     // the current epoch ends at the high watermark
			{-1, -1},        // a future epoch
		}
		type epochEnd = struct {
			epoch int32
			end   int64
		}
		switch _, current := c.Leader("epochs", 0, timeout); {
		case current == epoch2+1:
			// The leader changed once more: epoch2+1 is current, and
			// ends at the high watermark.
			want[3], want[4] = epochEnd{epoch2, 5}, epochEnd{epoch2 + 1, 5}
		case current > epoch2+1:
			// epoch2+1 is past and wrote nothing: the one before it.
			want[3], want[4] = epochEnd{epoch2, 5}, epochEnd{epoch2, 5}
		}
		for i, w := range want {
			if got[i].LeaderEpoch != w.epoch || got[i].EndOffset != w.end {
				t.Errorf("%s: epoch %d: got epoch %d end %d, want epoch %d end %d",
					what, []int32{epoch1 - 1, epoch1, epoch2 - 1, epoch2, epoch2 + 1}[i], got[i].LeaderEpoch, got[i].EndOffset, w.epoch, w.end)
			}
		}
	}
	check("after the leader change")

	c.StartNode(int(leader1))
	for id := 1; id <= 3; id++ {
		c.StopNode(id)
	}
	for id := 1; id <= 3; id++ {
		c.StartNode(id)
	}
	c.WaitReady()
	if l, _ := c.Leader("epochs", 0, timeout); l < 0 {
		t.Fatal("no leader after the restart")
	}
	check("after a full restart")
}

// consume polls n records and returns their values.
func consume(ctx context.Context, t *testing.T, cl *kgo.Client, n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		fetches := cl.PollRecords(ctx, n-len(out))
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d: %v", len(out), n, ctx.Err())
		}
		for _, fe := range fetches.Errors() {
			t.Fatalf("fetch error on %s/%d: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}
