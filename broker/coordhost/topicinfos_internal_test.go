package coordhost

import (
	"testing"

	"github.com/minikafka/minikafka-go/metadata"
)

// topicState is a three-broker state with topics "a" of n partitions and
// "b" of 2.
func topicState(t *testing.T, n int) *metadata.Snapshot {
	t.Helper()
	place := func(n int) [][]int32 {
		a := make([][]int32, n)
		for i := range a {
			a[i] = []int32{int32(i%3 + 1), int32((i+1)%3 + 1), int32((i+2)%3 + 1)}
		}
		return a
	}
	cmds := []metadata.Command{
		metadata.InitCluster{ClusterID: "c"},
		metadata.RegisterBroker{ID: 1, KafkaAddr: "127.0.0.1:1", RaftAddr: "127.0.0.1:2"},
		metadata.RegisterBroker{ID: 2, KafkaAddr: "127.0.0.1:3", RaftAddr: "127.0.0.1:4"},
		metadata.RegisterBroker{ID: 3, KafkaAddr: "127.0.0.1:5", RaftAddr: "127.0.0.1:6"},
		metadata.CreateTopic{Name: "b", Partitions: 2, ReplicationFactor: 3, Assignment: place(2)},
		metadata.CreateTopic{Name: "a", Partitions: int32(n), ReplicationFactor: 3, Assignment: place(n)},
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

// Every KIP-848 and share heartbeat lists the topics (their metadata
// hash): names, ids and partition counts, sorted, at a cost that does not
// grow with the partitions (it copied every topic's partitions).
func TestTopicInfosDoNotCopyPartitions(t *testing.T) {
	small, big := topicState(t, 8), topicState(t, 2000)
	got := topicInfos(big)
	idA, _ := big.TopicID("a")
	if len(got) != 2 || got[0].Name != "a" || got[0].Partitions != 2000 || [16]byte(got[0].ID) != [16]byte(idA) ||
		got[1].Name != "b" || got[1].Partitions != 2 {
		t.Fatalf("topic infos %+v", got)
	}
	allocs := func(s *metadata.Snapshot) float64 {
		return testing.AllocsPerRun(20, func() { topicInfos(s) })
	}
	if s, b := allocs(small), allocs(big); b > s {
		t.Fatalf("%v allocations at 2000 partitions, %v at 8", b, s)
	}
}
