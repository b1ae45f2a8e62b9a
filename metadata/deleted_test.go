package metadata

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// createDelete creates and deletes topic name, returning the state and
// the deleted id.
func createDelete(t testing.TB, s *Snapshot, name string) (*Snapshot, TopicID) {
	t.Helper()
	s = must(t, s, CreateTopic{Name: name, Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}})
	id, _ := s.TopicID(name)
	return must(t, s, DeleteTopic{Name: name}), id
}

// A deleted topic's id is kept until every registered broker, also one
// registered after the delete, has reported its replicas removed; then it
// is forgotten. Reports are idempotent; an unregistered broker's is
// refused.
func TestDeletedTopicForgottenOnceEveryBrokerReports(t *testing.T) {
	s, id := createDelete(t, cluster3(t), "x")
	if got := s.DeletedTopicsToReport(2); !slices.Equal(got, []TopicID{id}) {
		t.Fatalf("to report: %v, want [%v]", got, id)
	}
	s = must(t, s, ReplicasRemoved{Broker: 1, Topics: []TopicID{id}}, ReplicasRemoved{Broker: 1, Topics: []TopicID{id}},
		ReplicasRemoved{Broker: 2, Topics: []TopicID{id}}, broker(4))
	if len(s.DeletedTopicsToReport(1)) != 0 || !slices.Equal(s.DeletedTopicsToReport(3), []TopicID{id}) {
		t.Fatalf("to report after 1 and 2: %v, %v", s.DeletedTopicsToReport(1), s.DeletedTopicsToReport(3))
	}
	next, res, err := step(t, s, ReplicasRemoved{Broker: 3, Topics: []TopicID{id}})
	if err != nil || len(res.(ReplicasRemovedResult).Forgotten) != 0 || !next.TopicDeleted(id) {
		t.Fatalf("forgotten before the broker registered after the delete reported: %v %v", res, err)
	}
	if _, _, err := step(t, next, ReplicasRemoved{Broker: 9, Topics: []TopicID{id}}); !errors.Is(err, ErrInvalidBroker) {
		t.Fatalf("report of an unregistered broker: %v", err)
	}
	last, res, err := step(t, next, ReplicasRemoved{Broker: 4, Topics: []TopicID{id, {7}}})
	if err != nil || !slices.Equal(res.(ReplicasRemovedResult).Forgotten, []TopicID{id}) || last.TopicDeleted(id) {
		t.Fatalf("last report: %v %v; still deleted: %v", res, err, last.TopicDeleted(id))
	}
	if last.deleted.len() != 0 || last.deleted.buckets != nil {
		t.Fatalf("%d deleted ids left", last.deleted.len())
	}
}

// At most MaxDeletedTopics ids are kept while some broker has not
// reported: each delete past it forgets the oldest, version 1 deletes
// (unordered, from before) first.
func TestDeletedTopicsBounded(t *testing.T) {
	s := cluster3(t)
	var ids []TopicID
	legacy := DeleteTopic{Name: "legacy", legacy: true}
	s = must(t, s, CreateTopic{Name: "legacy", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}})
	legacyID, _ := s.TopicID("legacy")
	s = must(t, s, legacy)
	for i := range MaxDeletedTopics + 2 {
		name := fmt.Sprintf("t%d", i)
		// Apply directly: step's checks per command would make this
		// quadratic.
		var err error
		if s, _, err = s.Apply(s.index+1, CreateTopic{Name: name, Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}}); err != nil {
			t.Fatal(err)
		}
		id, _ := s.TopicID(name)
		ids = append(ids, id)
		if s, _, err = s.Apply(s.index+1, DeleteTopic{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	if n := s.deleted.len(); n != MaxDeletedTopics {
		t.Fatalf("%d deleted ids kept, want %d", n, MaxDeletedTopics)
	}
	if s.TopicDeleted(legacyID) || s.TopicDeleted(ids[0]) || s.TopicDeleted(ids[1]) || !s.TopicDeleted(ids[2]) || !s.TopicDeleted(ids[len(ids)-1]) {
		t.Fatal("the oldest deletes were not the ones forgotten")
	}
	b, _ := s.MarshalBinary()
	if got, err := DecodeSnapshot(b); err != nil || !got.Equal(s) {
		t.Fatalf("snapshot of a full set: %v", err)
	}
}

// A delete copies one bucket of the deleted set, not the set: the other
// buckets of the state before and after are the same maps.
func TestDeleteSharesTheDeletedSet(t *testing.T) {
	s := cluster3(t)
	for i := range 200 {
		s, _ = createDelete(t, s, fmt.Sprintf("t%d", i))
	}
	next, id := createDelete(t, s, "one-more")
	for i := range deletedBuckets {
		if i != bucketOf(id) && mapIdentity(s.deleted.buckets[i]) != mapIdentity(next.deleted.buckets[i]) {
			t.Fatalf("bucket %d of the deleted set was copied by a delete into bucket %d", i, bucketOf(id))
		}
	}
}

func mapIdentity(m map[TopicID]deletedTopic) string { return fmt.Sprintf("%p", m) }
