package groupcoord

import (
	"bytes"
	"testing"
)

// FuzzConsumerRecords applies arbitrary bytes as KIP-848 records after a
// valid group: no input panics, a rejected record leaves the view as it
// was, and whatever the view then holds survives a snapshot round trip.
func FuzzConsumerRecords(f *testing.F) {
	m := &ConsumerMember{ID: "m", Topics: []string{"t"}, Assigned: Assignment{tID: {0, 1}},
		AssignedEpochs: map[TopicID]map[int32]int32{tID: {0: 1, 1: 2}},
		Classic:        &ClassicMember{SessionTimeout: 10, Protocols: []ClassicProtocol{{Name: "range", Metadata: []byte{0, 1}}}}}
	for _, r := range []Record{
		ConsumerGroupRecord("g", 3, 7), ConsumerMemberRecord("g", m), TargetEpochRecord("g", 3),
		TargetMemberRecord("g", "m", m.Assigned), CurrentAssignmentRecord("g", m),
	} {
		f.Add(r.Key, r.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		v := NewView()
		for _, r := range []Record{ConsumerGroupRecord("g", 1, 0), ConsumerMemberRecord("g", m), CurrentAssignmentRecord("g", m)} {
			if err := v.Apply(r.Key, r.Value); err != nil {
				t.Fatal(err)
			}
		}
		before := v.AppendSnapshot(nil)
		if err := v.Apply(key, value); err != nil && !bytes.Equal(before, v.AppendSnapshot(nil)) {
			t.Fatalf("a rejected record changed the view: %v", err)
		}
		restored := NewView()
		if err := restored.Restore(v.AppendSnapshot(nil)); err != nil {
			t.Fatalf("restore: %v", err)
		}
		if !restored.Equal(v) {
			t.Fatal("the snapshot does not restore the view")
		}
	})
}
