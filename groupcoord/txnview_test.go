package groupcoord

import "testing"

// Transactional offset commits stay pending until their producer's
// marker: COMMIT makes them the group's offsets, ABORT drops them, and
// another producer's marker touches neither.
func TestViewPendingOffsetsFollowMarkers(t *testing.T) {
	v := NewView()
	commit := func(pid int64, group string, off int64) {
		t.Helper()
		r := OffsetRecord(group, "in", 0, Offset{Offset: off, LeaderEpoch: -1, CommitTimestamp: 1})
		if err := v.ApplyTxn(pid, r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	commit(1, "g", 10)
	commit(2, "h", 20)
	if _, ok := v.Offset("g", "in", 0); ok || !v.Pending("g", "in", 0) {
		t.Fatal("a pending offset is visible, or not pending")
	}
	v.Marker(3, true) // another producer's marker
	v.Marker(1, true)
	if o, ok := v.Offset("g", "in", 0); !ok || o.Offset != 10 || v.Pending("g", "in", 0) {
		t.Fatalf("after COMMIT: %+v %v", o, ok)
	}
	v.Marker(2, false)
	if _, ok := v.Offset("h", "in", 0); ok || v.Pending("h", "in", 0) {
		t.Fatal("an aborted offset became visible or stayed pending")
	}
	// A plain commit after a pending one wins over it at the marker.
	commit(1, "g", 11)
	plain := OffsetRecord("g", "in", 0, Offset{Offset: 12, LeaderEpoch: -1, CommitTimestamp: 2})
	if err := v.Apply(plain.Key, plain.Value); err != nil {
		t.Fatal(err)
	}
	v.Marker(1, true)
	if o, _ := v.Offset("g", "in", 0); o.Offset != 12 {
		t.Fatalf("the marker overwrote a later plain commit: %d", o.Offset)
	}
	commit(1, "g", 13)
	if err := v.Restore(NewView().AppendSnapshot(nil)); err != nil {
		t.Fatal(err)
	}
	if v.Pending("g", "in", 0) {
		t.Fatal("Restore kept pending offsets")
	}
	if err := v.ApplyTxn(1, AppendGroupKey(nil, "g"), nil); err == nil {
		t.Fatal("a transactional group metadata record was applied")
	}
}
