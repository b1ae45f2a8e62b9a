package client

import (
	"errors"
	"slices"
	"testing"
)

func TestPlanDrain(t *testing.T) {
	cluster := &ClusterDetail{
		Brokers: []BrokerDetail{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}, {NodeID: 4}, {NodeID: 5}},
		Topics: []TopicDetail{
			{Name: "a", Partitions: []PartitionDetail{
				{Partition: 0, Replicas: []int32{1, 2, 3}},
				{Partition: 1, Replicas: []int32{2, 3, 4}},
				{Partition: 2, Replicas: []int32{3, 4, 1}},
			}},
			{Name: "b", Partitions: []PartitionDetail{{Partition: 0, Replicas: []int32{4, 1, 2}}}},
		},
	}
	moves, err := PlanDrain(cluster, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Node 5 holds nothing, so it takes the first replica; then loads are
	// 2:3 3:3 4:3 5:1, so 5 again, then 5:2 is still lowest.
	want := []Move{
		{Topic: "a", Partition: 0, Replicas: []int32{5, 2, 3}},
		{Topic: "a", Partition: 2, Replicas: []int32{3, 4, 5}},
		{Topic: "b", Partition: 0, Replicas: []int32{4, 5, 2}},
	}
	if !slices.EqualFunc(moves, want, func(x, y Move) bool {
		return x.Topic == y.Topic && x.Partition == y.Partition && slices.Equal(x.Replicas, y.Replicas)
	}) {
		t.Fatalf("moves %v, want %v", moves, want)
	}

	small := &ClusterDetail{Brokers: []BrokerDetail{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}},
		Topics: []TopicDetail{{Name: "a", Partitions: []PartitionDetail{{Replicas: []int32{1, 2, 3}}}}}}
	if _, err := PlanDrain(small, 1); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("draining a node of a three-node cluster with RF3: %v", err)
	}
	if moves, err := PlanDrain(small, 7); err != nil || len(moves) != 0 {
		t.Fatalf("draining a node that holds nothing: %v %v", moves, err)
	}
}
