package groupcoord

import (
	"bytes"
	"testing"
)

// FuzzShareRecords applies arbitrary bytes as a record after a valid
// share group: no input panics, a rejected record leaves the view as it
// was, and whatever the view then holds survives a snapshot round trip.
func FuzzShareRecords(f *testing.F) {
	m := &ShareMember{ID: "m", RackID: new("r"), ClientID: "c", Topics: []string{"t", "u"}, Epoch: 2, PrevEpoch: 1,
		Assigned: Assignment{tID: {0, 1}}, Target: Assignment{tID: {0, 1}, uID: {2}}}
	valid := []Record{ShareGroupRecord("g", 2, 9), ShareMemberRecord("g", m), ShareTargetEpochRecord("g", 2),
		ShareTargetMemberRecord("g", "m", m.Target), ShareCurrentAssignmentRecord("g", m)}
	for _, r := range valid {
		f.Add(r.Key, r.Value)
	}
	f.Add(shareMemberTombstones("g", "m")[0].Key, []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		v := NewView()
		for _, r := range valid {
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
