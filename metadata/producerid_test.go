package metadata

import (
	"errors"
	"testing"
)

func allocate(t *testing.T, s *Snapshot, tid *string) (*Snapshot, ProducerIdentity) {
	t.Helper()
	next, res, err := step(t, s, AllocateProducerID{TransactionalID: tid})
	if err != nil {
		t.Fatalf("AllocateProducerID(%v): %v", tid, err)
	}
	return next, res.(ProducerIdentity)
}

func TestAllocateProducerIDNonTransactional(t *testing.T) {
	s := cluster3(t)
	var p ProducerIdentity
	for i := range 100 {
		s, p = allocate(t, s, nil)
		if want := (ProducerIdentity{ProducerID: FirstProducerID + int64(i)}); p != want {
			t.Fatalf("allocation %d = %+v, want %+v", i, p, want)
		}
	}
	if s.NextProducerID() != FirstProducerID+100 {
		t.Fatalf("NextProducerID = %d", s.NextProducerID())
	}
}

func TestAllocateProducerIDTransactional(t *testing.T) {
	s := cluster3(t)
	s, a0 := allocate(t, s, ptr("app-a"))
	if a0.Epoch != 0 || a0.ProducerID != FirstProducerID {
		t.Fatalf("first use of app-a = %+v", a0)
	}
	s, anon := allocate(t, s, nil)
	s, b0 := allocate(t, s, ptr("app-b"))
	s, a1 := allocate(t, s, ptr("app-a"))
	s, a2 := allocate(t, s, ptr("app-a"))
	s, b1 := allocate(t, s, ptr("app-b"))

	if a1 != (ProducerIdentity{a0.ProducerID, 1}) || a2 != (ProducerIdentity{a0.ProducerID, 2}) {
		t.Fatalf("app-a epochs: %+v %+v %+v, want same id and 0, 1, 2", a0, a1, a2)
	}
	if b1 != (ProducerIdentity{b0.ProducerID, 1}) {
		t.Fatalf("app-b: %+v then %+v", b0, b1)
	}
	ids := map[int64]bool{a0.ProducerID: true, anon.ProducerID: true, b0.ProducerID: true}
	if len(ids) != 3 || !(a0.ProducerID < anon.ProducerID && anon.ProducerID < b0.ProducerID) {
		t.Fatalf("ids not unique and increasing: %d %d %d", a0.ProducerID, anon.ProducerID, b0.ProducerID)
	}
	if got, ok := s.TransactionalProducer("app-a"); !ok || got != a2 {
		t.Fatalf("TransactionalProducer(app-a) = %+v, %v", got, ok)
	}

	if _, _, err := step(t, s, AllocateProducerID{TransactionalID: ptr("")}); !errors.Is(err, ErrInvalidTransactionalID) {
		t.Fatalf("empty transactional id: err = %v", err)
	}
}

func TestAllocateProducerIDEpochOverflow(t *testing.T) {
	s := cluster3(t)
	s, first := allocate(t, s, ptr("tx"))
	s.transactional["tx"] = ProducerIdentity{first.ProducerID, MaxProducerEpoch - 1} // s is private to this test

	s, last := allocate(t, s, ptr("tx"))
	if last != (ProducerIdentity{first.ProducerID, MaxProducerEpoch}) {
		t.Fatalf("bump to the last epoch = %+v", last)
	}
	s, fresh := allocate(t, s, ptr("tx"))
	if fresh.Epoch != 0 || fresh.ProducerID <= first.ProducerID {
		t.Fatalf("after epoch %d: %+v, want a new, higher id at epoch 0", MaxProducerEpoch, fresh)
	}
	_, again := allocate(t, s, ptr("tx"))
	if again != (ProducerIdentity{fresh.ProducerID, 1}) {
		t.Fatalf("after the new id: %+v", again)
	}
}

func TestAllocateProducerIDExhausted(t *testing.T) {
	s := cluster3(t)
	s.nextProducerID = ProducerIDKeyedBase - 2
	s, last := allocate(t, s, nil)
	if last.ProducerID != ProducerIDKeyedBase-2 {
		t.Fatalf("last id = %d", last.ProducerID)
	}
	for _, tid := range []*string{nil, ptr("tx")} {
		if _, _, err := step(t, s, AllocateProducerID{TransactionalID: tid}); !errors.Is(err, ErrProducerIDsExhausted) {
			t.Fatalf("AllocateProducerID(%v) with ids exhausted: err = %v", tid, err)
		}
	}
}

// Ids are never reused, even by a node that restarts from a snapshot.
func TestProducerIDsSurviveSnapshot(t *testing.T) {
	s := cluster3(t)
	seen := map[int64]bool{}
	var p ProducerIdentity
	for range 5 {
		s, p = allocate(t, s, nil)
		seen[p.ProducerID] = true
	}
	s, tx := allocate(t, s, ptr("tx"))
	seen[tx.ProducerID] = true

	b, _ := s.MarshalBinary()
	restored, err := DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		restored, p = allocate(t, restored, nil)
		if seen[p.ProducerID] || p.ProducerID < tx.ProducerID {
			t.Fatalf("id %d reused or lower after restore (seen %v)", p.ProducerID, seen)
		}
		seen[p.ProducerID] = true
	}
	_, tx1 := allocate(t, restored, ptr("tx"))
	if tx1 != (ProducerIdentity{tx.ProducerID, 1}) {
		t.Fatalf("transactional after restore = %+v, want %+v epoch 1", tx1, tx)
	}
}
