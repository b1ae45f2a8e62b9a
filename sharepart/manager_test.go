package sharepart

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memStore is a Store in memory that can be made to fail.
type memStore struct {
	mu   sync.Mutex // guards m
	m    map[Key][]byte
	fail error
}

func (s *memStore) Read(_ context.Context, k Key, _ int32) (Snapshot, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	if !ok {
		return Snapshot{}, false, nil
	}
	snap, err := DecodeValue(v)
	return snap, err == nil, err
}

func (s *memStore) Write(_ context.Context, k Key, snap Snapshot) error {
	if s.fail != nil {
		return s.fail
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = EncodeValue(snap)
	return nil
}

// fakeLog is a data partition's replica.
type fakeLog struct {
	leader     bool
	epoch      int32
	start, end int64
}

func (l *fakeLog) IsLeader() bool        { return l.leader }
func (l *fakeLog) LeaderEpoch() int32    { return l.epoch }
func (l *fakeLog) HighWatermark() int64  { return l.end }
func (l *fakeLog) LogStartOffset() int64 { return l.start }

func newTestManager(store Store, earliest bool, now *time.Time) *Manager {
	return NewManager(ManagerConfig{Partition: testCfg, ResetEarliest: earliest, Now: func() time.Time { return *now }}, store)
}

func acquire(t *testing.T, m *Manager, k Key, log Log, member string, max int) []AcquiredRange {
	t.Helper()
	var out []AcquiredRange
	err := m.Do(context.Background(), k, log, func(p *Partition, now int64) error {
		out = p.Acquire(member, now, log.LogStartOffset(), log.HighWatermark(), max)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestManagerFailover: a new leader (a new Manager on the same Store, a
// new epoch) keeps the acknowledgements and redelivers the in-flight
// records counted once more; the old one, no longer leader, is refused.
func TestManagerFailover(t *testing.T) {
	store := &memStore{m: map[Key][]byte{}}
	now := time.UnixMilli(0)
	k := Key{Group: "g", Partition: 0}
	log := &fakeLog{leader: true, epoch: 1, start: 0, end: 5}
	m1 := newTestManager(store, true, &now)
	acq(t, acquire(t, m1, k, log, "a", 5), AcquiredRange{0, 4, 1})
	err := m1.Do(context.Background(), k, log, func(p *Partition, now int64) error {
		return p.AcknowledgeAll("a", []Ack{{0, 1, []AckType{AckAccept}}, {3, 3, []AckType{AckReject}}}, now)
	})
	if err != nil {
		t.Fatal(err)
	}
	log.leader = false
	if err := m1.Do(context.Background(), k, log, func(*Partition, int64) error { return nil }); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("old leader: %v", err)
	}
	log2 := &fakeLog{leader: true, epoch: 2, start: 0, end: 5}
	m2 := newTestManager(store, true, &now)
	acq(t, acquire(t, m2, k, log2, "b", 5), AcquiredRange{2, 2, 2}, AcquiredRange{4, 4, 2})
}

// TestManagerFailedWriteDropsState: a change whose write fails is not
// kept: the next call reloads the persisted state.
func TestManagerFailedWriteDropsState(t *testing.T) {
	store := &memStore{m: map[Key][]byte{}, fail: kerr.RequestTimedOut}
	now := time.UnixMilli(0)
	k := Key{Group: "g"}
	log := &fakeLog{leader: true, epoch: 1, end: 3}
	m := newTestManager(store, true, &now)
	err := m.Do(context.Background(), k, log, func(p *Partition, now int64) error {
		p.Acquire("a", now, 0, 3, 3)
		return nil
	})
	if !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("failed write: %v", err)
	}
	store.fail = nil
	acq(t, acquire(t, m, k, log, "b", 3), AcquiredRange{0, 2, 1})
}

// TestManagerStartsAtResetOffsetAndExpiresLocks: a new share partition
// starts at the high watermark (latest); a lock past its duration is
// released on the leader's clock and persisted.
func TestManagerStartsAtResetOffsetAndExpiresLocks(t *testing.T) {
	store := &memStore{m: map[Key][]byte{}}
	now := time.UnixMilli(0)
	k := Key{Group: "g"}
	log := &fakeLog{leader: true, epoch: 1, start: 2, end: 10}
	m := newTestManager(store, false, &now)
	acq(t, acquire(t, m, k, log, "a", 5))
	log.end = 12
	acq(t, acquire(t, m, k, log, "a", 5), AcquiredRange{10, 11, 1})
	now = now.Add(time.Duration(testCfg.LockDurationMs) * time.Millisecond)
	if err := m.ExpireAll(context.Background(), func(Key) (Log, bool) { return log, true }); err != nil {
		t.Fatal(err)
	}
	s, _, _ := store.Read(context.Background(), k, -1)
	want := Snapshot{StateEpoch: 0, LeaderEpoch: 1, StartOffset: 10, Batches: []Batch{{10, 11, Available, 1}}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("persisted %+v, want %+v", s, want)
	}
	acq(t, acquire(t, m, k, log, "b", 5), AcquiredRange{10, 11, 2})
}

func TestSessions(t *testing.T) {
	s := NewSessions(1)
	k := SessionKey{"g", "m"}
	tp := func(p int32) TopicPartition { return TopicPartition{Partition: p} }
	if _, err := s.Next(k, 1, nil, nil); !errors.Is(err, ErrSessionNotFound) {
		t.Fatal(err)
	}
	if _, _, err := s.Open(k, []TopicPartition{tp(1), tp(0)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Open(SessionKey{"g", "other"}, nil); !errors.Is(err, ErrSessionLimit) {
		t.Fatalf("second session: %v", err)
	}
	if _, err := s.Next(k, 2, nil, nil); !errors.Is(err, ErrSessionEpoch) {
		t.Fatal(err)
	}
	parts, err := s.Next(k, 1, []TopicPartition{tp(2)}, []TopicPartition{tp(0)})
	if err != nil || !reflect.DeepEqual(parts, []TopicPartition{tp(1), tp(2)}) {
		t.Fatalf("parts %v %v", parts, err)
	}
	if _, err := s.Next(k, 1, nil, nil); !errors.Is(err, ErrSessionEpoch) {
		t.Fatal("epoch 1 reused")
	}
	if parts, err := s.Close(k); err != nil || len(parts) != 2 {
		t.Fatalf("close %v %v", parts, err)
	}
	if _, err := s.Close(k); !errors.Is(err, ErrSessionNotFound) {
		t.Fatal(err)
	}
}

// TestManagerReleasedFires: the released signal fires when records become
// Available (a release, an expired lock), not when they are acquired.
func TestManagerReleasedFires(t *testing.T) {
	store := &memStore{m: map[Key][]byte{}}
	now := time.UnixMilli(0)
	k := Key{Group: "g"}
	log := &fakeLog{leader: true, epoch: 1, end: 2}
	m := newTestManager(store, true, &now)
	fired := func(seen <-chan struct{}) bool {
		select {
		case <-seen:
			return true
		default:
			return false
		}
	}
	seen := m.Released(k).C()
	acquire(t, m, k, log, "a", 2)
	if fired(seen) {
		t.Fatal("fired on an acquisition")
	}
	err := m.Do(context.Background(), k, log, func(p *Partition, now int64) error {
		return p.Acknowledge("a", 0, 0, []AckType{AckRelease}, now)
	})
	if err != nil || !fired(seen) {
		t.Fatalf("release: %v, fired %v", err, fired(seen))
	}
	seen = m.Released(k).C()
	now = now.Add(time.Hour)
	if err := m.ExpireAll(context.Background(), func(Key) (Log, bool) { return log, true }); err != nil || !fired(seen) {
		t.Fatalf("expiry: %v, fired %v", err, fired(seen))
	}
}

// TestSessionsAttachAndDrop: a session ends with its connection (Drop),
// only the opening that watched it; replacing or closing a session stops
// the watch (detach).
func TestSessionsAttachAndDrop(t *testing.T) {
	s := NewSessions(10)
	k := SessionKey{"g", "m"}
	id1, _, _ := s.Open(k, nil)
	detached := 0
	s.Attach(k, id1, func() { detached++ })
	id2, _, _ := s.Open(k, nil) // replaces the first opening
	if detached != 1 {
		t.Fatalf("replaced: detached %d", detached)
	}
	if _, ok := s.Drop(k, id1); ok {
		t.Fatal("dropped by the old opening's connection")
	}
	s.Attach(k, id1, func() { detached++ }) // too late: at once
	if detached != 2 {
		t.Fatalf("late attach: detached %d", detached)
	}
	if _, ok := s.Drop(k, id2); !ok {
		t.Fatal("not dropped by its own connection")
	}
	if _, err := s.Next(k, 1, nil, nil); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("after drop: %v", err)
	}
}

// TestManagerConcurrentMembers: members acquiring and acknowledging one
// share partition at once, with random accepts, releases and rejects,
// never hold a record together, never see a delivery count past the
// limit, and leave every record accepted or archived.
func TestManagerConcurrentMembers(t *testing.T) {
	store := &memStore{m: map[Key][]byte{}}
	now := time.UnixMilli(0)
	k := Key{Group: "g"}
	const records = 300
	log := &fakeLog{leader: true, epoch: 1, end: records}
	m := newTestManager(store, true, &now)
	var mu sync.Mutex // guards holder and accepted
	holder := map[int64]string{}
	accepted := map[int64]bool{}
	var wg sync.WaitGroup
	for i := range 4 {
		member := string(rune('a' + i))
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		wg.Go(func() {
			for range 400 {
				// The bookkeeping runs inside Do, under the share
				// partition's lock, so it sees exactly who holds what.
				var got []AcquiredRange
				err := m.Do(context.Background(), k, log, func(p *Partition, now int64) error {
					got = p.Acquire(member, now, 0, records, 1+rng.IntN(7))
					mu.Lock()
					defer mu.Unlock()
					for _, r := range got {
						for off := r.First; off <= r.Last; off++ {
							if h, ok := holder[off]; ok || accepted[off] || r.DeliveryCount > testCfg.DeliveryLimit {
								t.Errorf("%s acquired %d (count %d), held by %q, accepted %v", member, off, r.DeliveryCount, h, accepted[off])
							}
							holder[off] = member
						}
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range got {
					for off := r.First; off <= r.Last; off++ {
						typ := []AckType{AckAccept, AckRelease, AckReject}[rng.IntN(3)]
						err := m.Do(context.Background(), k, log, func(p *Partition, now int64) error {
							if err := p.Acknowledge(member, off, off, []AckType{typ}, now); err != nil {
								return err
							}
							mu.Lock()
							defer mu.Unlock()
							delete(holder, off)
							accepted[off] = accepted[off] || typ == AckAccept
							return nil
						})
						if err != nil {
							t.Errorf("%s ack %d: %v", member, off, err)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	// Whatever is left goes to one member, who accepts it.
	for {
		var got []AcquiredRange
		_ = m.Do(context.Background(), k, log, func(p *Partition, now int64) error {
			got = p.Acquire("z", now, 0, records, records)
			for _, r := range got {
				if err := p.Acknowledge("z", r.First, r.Last, []AckType{AckAccept}, now); err != nil {
					t.Fatal(err)
				}
			}
			return nil
		})
		if len(got) == 0 {
			break
		}
	}
	s, _, _ := store.Read(context.Background(), k, -1)
	if s.StartOffset != records || len(s.Batches) != 0 {
		t.Fatalf("left %+v, want every record done", s)
	}
}
