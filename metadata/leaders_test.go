package metadata

import (
	"errors"
	"testing"
)

// A batch of leader reports ends where the same reports one at a time
// end; a rejected report is counted and skips only itself.
func TestSetPartitionLeadersMatchesOneAtATime(t *testing.T) {
	base := must(t, cluster3(t),
		CreateTopic{Name: "t", Partitions: 3, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}, {2, 3}, {3, 1}}},
		CreateTopic{Name: "u", Partitions: 1, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}}},
		SetPartitionLeader{Topic: "t", Partition: 0, Leader: 1, Epoch: 5})
	reports := []SetPartitionLeader{
		{Topic: "t", Partition: 0, Leader: 2, Epoch: 6},
		{Topic: "t", Partition: 1, Leader: 3, Epoch: 1},
		{Topic: "t", Partition: 0, Leader: 1, Epoch: 4},    // stale after the first
		{Topic: "t", Partition: 2, Leader: 2, Epoch: 1},    // not a replica: rejected
		{Topic: "nope", Partition: 0, Leader: 1, Epoch: 1}, // unknown topic: rejected
		{Topic: "u", Partition: 0, Leader: 2, Epoch: 3},
		{Topic: "t", Partition: 1, Leader: 2, Epoch: 1}, // a second leader in epoch 1: rejected
	}
	one := base
	for _, r := range reports {
		if next, _, err := step(t, one, r); err == nil {
			one = next
		}
	}
	batch, res, err := step(t, base, SetPartitionLeaders{Reports: reports})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.(SetPartitionLeadersResult); got.Applied != 3 || got.Rejected != 3 {
		t.Fatalf("result %+v, want 3 applied and 3 rejected", got)
	}
	for _, tp := range []struct {
		topic string
		p     int32
	}{{"t", 0}, {"t", 1}, {"t", 2}, {"u", 0}} {
		a, _ := one.Partition(tp.topic, tp.p)
		b, _ := batch.Partition(tp.topic, tp.p)
		if a.Leader != b.Leader || a.LeaderEpoch != b.LeaderEpoch {
			t.Errorf("%s-%d: batch %d@%d, one at a time %d@%d", tp.topic, tp.p, b.Leader, b.LeaderEpoch, a.Leader, a.LeaderEpoch)
		}
	}
	if p, _ := base.Partition("t", 0); p.Leader != 1 || p.LeaderEpoch != 5 {
		t.Fatalf("the batch changed the state it was applied to: %+v", p)
	}
	if batch.LayoutIndex() != base.LayoutIndex() {
		t.Fatalf("leader reports moved the layout index")
	}
	if _, _, err := step(t, base, SetPartitionLeaders{Reports: make([]SetPartitionLeader, MaxLeaderReports+1)}); !errors.Is(err, ErrTooManyLeaderReports) {
		t.Fatalf("%d reports: %v, want ErrTooManyLeaderReports", MaxLeaderReports+1, err)
	}
}

// TopicLed holds once every partition of a topic has a leader, and costs
// no copy of the topic (CreateTopics checks it on every metadata change
// while it waits for the leaders).
func TestTopicLed(t *testing.T) {
	s := must(t, cluster3(t),
		CreateTopic{Name: "t", Partitions: 2, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}, {2, 3}}},
		SetPartitionLeader{Topic: "t", Partition: 0, Leader: 1, Epoch: 1})
	if s.TopicLed("t") {
		t.Fatal("a topic with a partition without a leader is led")
	}
	if s.TopicLed("nope") {
		t.Fatal("a topic that does not exist is led")
	}
	s = must(t, s, SetPartitionLeader{Topic: "t", Partition: 1, Leader: 3, Epoch: 1})
	if !s.TopicLed("t") {
		t.Fatal("a topic whose every partition has a leader is not led")
	}
	if n := testing.AllocsPerRun(10, func() { s.TopicLed("t") }); n != 0 {
		t.Fatalf("TopicLed allocated %v times", n)
	}
}
