package coordhost

import (
	"fmt"
	"testing"

	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/internal/metatest"
	"github.com/minikafka/minikafka-go/metadata"
)

// The group coordinators read topics on every KIP-848 and share
// heartbeat (the subscribed topics' metadata hash): a lookup by name or
// id costs the same in a cluster of two topics as in one of thousands,
// and no read copies a topic's partitions (it once copied every topic's).
func TestMetaTopicsCostWhatTheyName(t *testing.T) {
	state := func(topics, partitions int) metaTopics {
		ts := []metatest.Topic{{Name: "b", Partitions: 2}, {Name: "a", Partitions: partitions}}
		for i := range topics - 2 {
			ts = append(ts, metatest.Topic{Name: fmt.Sprintf("z%04d", i), Partitions: 1})
		}
		s := metatest.State(t, ts)
		return func() *metadata.Snapshot { return s }
	}
	small, big := state(2, 8), state(2000, 2000)
	all := big.All()
	idA, _ := big().TopicID("a")
	if len(all) != 2000 || all[0].Name != "a" || all[0].Partitions != 2000 || [16]byte(all[0].ID) != [16]byte(idA) ||
		all[1].Name != "b" || all[1].Partitions != 2 {
		t.Fatalf("first topics %+v of %d", all[:2], len(all))
	}
	if a, ok := big.TopicByID(groupcoord.TopicID(idA)); !ok || a != all[0] {
		t.Fatalf("topic by id %+v %v, want %+v", a, ok, all[0])
	}
	if _, ok := big.Topic("nope"); ok {
		t.Fatal("a topic that does not exist was found")
	}
	lookups := func(s metaTopics) float64 {
		id, _ := s().TopicID("a")
		return testing.AllocsPerRun(20, func() {
			s.Topic("a")
			s.TopicByID(groupcoord.TopicID(id))
		})
	}
	if s, b := lookups(small), lookups(big); b > s {
		t.Fatalf("a lookup by name and by id: %v allocations among 2000 topics, %v among 2", b, s)
	}
	listing := func(s metaTopics) float64 { return testing.AllocsPerRun(20, func() { s.All() }) }
	if s, b := listing(state(2, 8)), listing(state(2, 2000)); b > s {
		t.Fatalf("listing every topic: %v allocations with 2000 partitions, %v with 8", b, s)
	}
}

// A regex subscription's matches are kept while Version stands: it moves
// with the topics a regex may match and stands through leader reports,
// which come by the thousand after a fail-over.
func TestMetaTopicsVersionMovesWithTheTopicsOnly(t *testing.T) {
	base := []metatest.Topic{{Name: "a", Partitions: 2}}
	version := func(more ...metadata.Command) uint64 {
		s := metatest.State(t, base, more...)
		return metaTopics(func() *metadata.Snapshot { return s }).Version()
	}
	v := version()
	if got := version(metadata.SetPartitionLeader{Topic: "a", Partition: 0, Leader: 1, Epoch: 1},
		metadata.SetPartitionLeader{Topic: "a", Partition: 1, Leader: 2, Epoch: 1}); got != v {
		t.Fatalf("two leader reports moved the version from %d to %d", v, got)
	}
	created := version(metadata.CreateTopic{Name: "b", Partitions: 1, ReplicationFactor: 3, Assignment: [][]int32{{1, 2, 3}}})
	if created == v {
		t.Fatalf("creating a topic left the version at %d", v)
	}
	if got := version(metadata.DeleteTopic{Name: "a"}); got == v {
		t.Fatalf("deleting a topic left the version at %d", v)
	}
}
