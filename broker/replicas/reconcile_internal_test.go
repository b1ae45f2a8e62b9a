package replicas

import (
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/internal/metatest"
	"github.com/minikafka/minikafka-go/metadata"
)

// reconcile runs on every metadata change and looks up each local replica's
// partition; a lookup that copied the whole topic made a pass quadratic in
// the partitions (at 1000 partitions, 7% of an idle node's CPU).
func TestPartitionOfCopiesOnlyThePartition(t *testing.T) {
	const parts = 1000
	state := metatest.State(t, []metatest.Topic{{Name: "big", Partitions: parts}})
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
