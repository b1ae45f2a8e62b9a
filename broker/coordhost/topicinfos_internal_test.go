package coordhost

import (
	"testing"

	"github.com/minikafka/minikafka-go/internal/metatest"
	"github.com/minikafka/minikafka-go/metadata"
)

// Every KIP-848 and share heartbeat lists the topics (their metadata
// hash): names, ids and partition counts, sorted, at a cost that does not
// grow with the partitions (it copied every topic's partitions).
func TestTopicInfosDoNotCopyPartitions(t *testing.T) {
	state := func(n int) *metadata.Snapshot {
		return metatest.State(t, []metatest.Topic{{Name: "b", Partitions: 2}, {Name: "a", Partitions: n}})
	}
	small, big := state(8), state(2000)
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
