package replicas

import (
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/metadata"
)

// bigTopicState is a three-broker metadata state with one topic of n
// partitions, replicas rotating over the brokers.
func bigTopicState(t *testing.T, name string, n int) *metadata.Snapshot {
	t.Helper()
	assignment := make([][]int32, n)
	for i := range assignment {
		assignment[i] = []int32{int32(i%3 + 1), int32((i+1)%3 + 1), int32((i+2)%3 + 1)}
	}
	cmds := []metadata.Command{
		metadata.InitCluster{ClusterID: "c"},
		metadata.RegisterBroker{ID: 1, KafkaAddr: "127.0.0.1:1", RaftAddr: "127.0.0.1:2"},
		metadata.RegisterBroker{ID: 2, KafkaAddr: "127.0.0.1:3", RaftAddr: "127.0.0.1:4"},
		metadata.RegisterBroker{ID: 3, KafkaAddr: "127.0.0.1:5", RaftAddr: "127.0.0.1:6"},
		metadata.CreateTopic{Name: name, Partitions: int32(n), ReplicationFactor: 3, Assignment: assignment},
	}
	s := &metadata.Snapshot{}
	for i, c := range cmds {
		var err error
		if s, _, err = s.Apply(uint64(i+1), c); err != nil {
			t.Fatalf("Apply(%#v): %v", c, err)
		}
	}
	return s
}

// reconcile runs on every metadata change and looks up each local replica's
// partition; a lookup that copied the whole topic made a pass quadratic in
// the partitions (at 1000 partitions, 7% of an idle node's CPU).
func TestPartitionOfCopiesOnlyThePartition(t *testing.T) {
	const parts = 1000
	state := bigTopicState(t, "big", parts)
	id, ok := state.TopicID("big")
	if !ok {
		t.Fatal("TopicID: topic not found")
	}
	lr := &Replica[struct{}]{info: Info{Topic: "big", Partition: 7}, id: id}

	p, ok := partitionOf(state, lr)
	if want := []int32{2, 3, 1}; !ok || !slices.Equal(p.Replicas, want) {
		t.Fatalf("partitionOf = %v, %v; want replicas %v", p, ok, want)
	}
	// The result is the caller's: changing it leaves the state alone.
	p.Replicas[0] = 99
	if again, _ := partitionOf(state, lr); again.Replicas[0] != 2 {
		t.Fatalf("partitionOf shares its replicas with the state: %v", again.Replicas)
	}

	if allocs := testing.AllocsPerRun(50, func() { partitionOf(state, lr) }); allocs > 1 {
		t.Fatalf("partitionOf allocates %.0f times per call on a %d-partition topic; want at most 1 (the replica list)", allocs, parts)
	}

	for _, bad := range []*Replica[struct{}]{
		{info: Info{Topic: "big", Partition: parts}, id: id},              // past the last partition
		{info: Info{Topic: "big", Partition: 7}},                          // no id
		{info: Info{Topic: "big", Partition: 7}, id: metadata.TopicID{1}}, // another topic of that name
		{info: Info{Topic: "gone", Partition: 0}, id: id},                 // no such topic
	} {
		if p, ok := partitionOf(state, bad); ok {
			t.Errorf("partitionOf(%+v) = %v, true; want false", bad.info, p)
		}
	}
}
