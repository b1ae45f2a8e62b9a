package metadata

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, ProducerIDKeySize) }

// The keyed permutation is a bijection on [0, 2^62): the inverse undoes it.
func TestFeistelInverts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		x := r.Uint64() & (1<<62 - 1)
		y := feistel(testKey(7), x, false)
		if y >= 1<<62 || feistel(testKey(7), y, true) != x {
			t.Fatalf("feistel(%d) = %d, inverse %d", x, y, feistel(testKey(7), y, true))
		}
	}
}

// With a key, ids are unique, above ProducerIDKeyedBase, not consecutive,
// and differ between keys; ids handed out before the key stay below it.
// Transactional ids pass the snapshot's invariant (step checks it) and
// the key survives a snapshot, after which allocation goes on identically.
func TestKeyedProducerIDs(t *testing.T) {
	s := cluster3(t)
	s, legacy := allocate(t, s, nil)
	if legacy.ProducerID != FirstProducerID {
		t.Fatalf("before the key: %d, want %d", legacy.ProducerID, FirstProducerID)
	}
	other, _, err := step(t, s, SetProducerIDKey{Key: testKey(2)})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, err = step(t, s, SetProducerIDKey{Key: testKey(1)}); err != nil || !s.HasProducerIDKey() {
		t.Fatalf("SetProducerIDKey: %v", err)
	}
	seen := map[int64]bool{legacy.ProducerID: true}
	consecutive := 0
	prev := legacy.ProducerID
	for i := range 500 {
		var p ProducerIdentity
		tid := (*string)(nil)
		if i%5 == 0 {
			tid = ptr(string(rune('a' + i%26)))
		}
		s, p = allocate(t, s, tid)
		if p.Epoch != 0 {
			continue // a transactional id seen before: same id, next epoch
		}
		if p.ProducerID < ProducerIDKeyedBase || seen[p.ProducerID] {
			t.Fatalf("id %d: %d (seen before: %v)", i, p.ProducerID, seen[p.ProducerID])
		}
		seen[p.ProducerID] = true
		if p.ProducerID == prev+1 {
			consecutive++
		}
		prev = p.ProducerID
	}
	if consecutive > 2 {
		t.Errorf("%d of the keyed ids follow their predecessor", consecutive)
	}
	_, withOther := allocate(t, other, nil)
	_, withKey := allocate(t, must(t, cluster3(t), AllocateProducerID{}, SetProducerIDKey{Key: testKey(1)}), nil)
	if withOther.ProducerID == withKey.ProducerID {
		t.Errorf("two keys gave the same first id %d", withKey.ProducerID)
	}

	b, _ := s.MarshalBinary()
	restored, err := DecodeSnapshot(b)
	if err != nil || !restored.Equal(s) {
		t.Fatalf("snapshot round trip: %v", err)
	}
	_, a := allocate(t, s, nil)
	_, r := allocate(t, restored, nil)
	if a != r {
		t.Fatalf("after a snapshot: %+v, replayed %+v", r, a)
	}
}

func TestSetProducerIDKeyOnce(t *testing.T) {
	s := must(t, cluster3(t), SetProducerIDKey{Key: testKey(1)})
	if _, _, err := step(t, s, SetProducerIDKey{Key: testKey(1)}); err != nil {
		t.Errorf("the same key again: %v, want a no-op", err)
	}
	if _, _, err := step(t, s, SetProducerIDKey{Key: testKey(2)}); !errors.Is(err, ErrProducerIDKeySet) {
		t.Errorf("another key: %v, want ErrProducerIDKeySet", err)
	}
	if _, _, err := step(t, cluster3(t), SetProducerIDKey{Key: make([]byte, 16)}); !errors.Is(err, ErrInvalidProducerIDKey) {
		t.Errorf("a short key: %v, want ErrInvalidProducerIDKey", err)
	}
	if _, _, err := step(t, &Snapshot{}, SetProducerIDKey{Key: testKey(1)}); !errors.Is(err, ErrClusterNotInitialized) {
		t.Errorf("before InitCluster: %v", err)
	}
	enc, _ := Encode(SetProducerIDKey{Key: testKey(3)})
	if dec, err := Decode(enc); err != nil || !bytes.Equal(dec.(SetProducerIDKey).Key, testKey(3)) {
		t.Errorf("codec round trip: %v %v", dec, err)
	}
}
