package sharepart

import (
	"context"
	"errors"
	"testing"
	"time"
)

// generation is the Generation of k's share partition as Do sees it.
func generation(t *testing.T, m *Manager, k Key, log Log) uint64 {
	t.Helper()
	var gen uint64
	if err := m.Do(context.Background(), k, log, func(p *Partition, _ int64) error {
		gen = p.Generation()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return gen
}

// Each load of a share partition has its own Generation: a new leader
// epoch and a failed write load it again; Do on a loaded partition and a
// Reset's new start do not share one with an earlier load.
func TestManagerGenerationChangesWithEveryLoad(t *testing.T) {
	store := &memStore{m: map[Key][]byte{}}
	now := time.UnixMilli(0)
	k := Key{Group: "g", Partition: 0}
	log := &fakeLog{leader: true, epoch: 1, end: 5}
	m := newTestManager(store, true, &now)
	acquire(t, m, k, log, "a", 2)
	g1 := generation(t, m, k, log)
	if g1 == 0 || generation(t, m, k, log) != g1 {
		t.Fatalf("generation %d, then %d: want one non-zero generation while loaded", g1, generation(t, m, k, log))
	}
	log.epoch = 2 // the leadership went elsewhere and came back
	g2 := generation(t, m, k, log)
	if g2 == g1 {
		t.Fatalf("generation %d after a new leader epoch, as before", g2)
	}
	store.fail = errors.New("write refused")
	if err := m.Do(context.Background(), k, log, func(p *Partition, now int64) error {
		p.Acquire("a", now, 0, 5, 1)
		return nil
	}); err == nil {
		t.Fatal("a failed write returned no error")
	}
	store.fail = nil
	g3 := generation(t, m, k, log)
	if g3 == g2 || g3 == g1 {
		t.Fatalf("generation %d after a failed write (before %d, %d)", g3, g1, g2)
	}
	if err := m.Reset(context.Background(), k, log, 3); err != nil {
		t.Fatal(err)
	}
	if g4 := generation(t, m, k, log); g4 == g3 || g4 == g2 || g4 == g1 {
		t.Fatalf("generation %d after a reset (before %d, %d, %d)", g4, g1, g2, g3)
	}
}

// A session that acquired from a partition in one generation is stale in
// another; one that never acquired from it, or forgot it, is not.
func TestSessionsCheckGeneration(t *testing.T) {
	s := NewSessions(4)
	k := SessionKey{Group: "g", Member: "m"}
	tp, other := TopicPartition{Partition: 0}, TopicPartition{Partition: 1}
	if _, _, err := s.Open(k, []TopicPartition{tp, other}); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckGeneration(k, tp, 7); err != nil {
		t.Fatalf("before any acquisition: %v", err)
	}
	s.Acquired(k, tp, 7)
	if err := s.CheckGeneration(k, tp, 7); err != nil {
		t.Fatalf("same generation: %v", err)
	}
	if err := s.CheckGeneration(k, tp, 8); !errors.Is(err, ErrSessionStale) {
		t.Fatalf("another generation: %v, want ErrSessionStale", err)
	}
	if err := s.CheckGeneration(k, other, 8); err != nil {
		t.Fatalf("a partition the session never acquired from: %v", err)
	}
	if _, err := s.Next(k, 1, nil, []TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckGeneration(k, tp, 8); err != nil {
		t.Fatalf("after the session forgot the partition: %v", err)
	}
	s.Acquired(k, tp, 8)
	if _, _, err := s.Open(k, []TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckGeneration(k, tp, 9); err != nil {
		t.Fatalf("a new session of the member: %v", err)
	}
}
