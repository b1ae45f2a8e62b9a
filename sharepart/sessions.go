package sharepart

import (
	"cmp"
	"errors"
	"slices"
	"sync"
)

// Share-session errors, each answered with Kafka's code.
var (
	// ErrSessionNotFound: SHARE_SESSION_NOT_FOUND.
	ErrSessionNotFound = errors.New("sharepart: share session not found")
	// ErrSessionEpoch: INVALID_SHARE_SESSION_EPOCH.
	ErrSessionEpoch = errors.New("sharepart: invalid share session epoch")
	// ErrSessionLimit: SHARE_SESSION_LIMIT_REACHED.
	ErrSessionLimit = errors.New("sharepart: share session limit reached")
	// ErrSessionTooLarge: a session naming more than MaxSessionPartitions
	// partitions (INVALID_REQUEST).
	ErrSessionTooLarge = errors.New("sharepart: too many partitions in a share session")
	// ErrSessionStale: a partition the session acquired from has been
	// loaded again since (Partition.Generation); the session ends and its
	// member opens a new one (SHARE_SESSION_NOT_FOUND).
	ErrSessionStale = errors.New("sharepart: share partition reloaded since the session acquired from it")
)

// MaxSessionPartitions bounds the partitions one share session names.
const MaxSessionPartitions = 1 << 14

// SessionKey names a share session: Kafka keys it by group and member.
type SessionKey struct{ Group, Member string }

// TopicPartition names a partition by topic id.
type TopicPartition struct {
	TopicID   [16]byte
	Partition int32
}

// Sessions is a node's share-session cache (Kafka's ShareSessionCache):
// each session has the epoch its next request must carry and the
// partitions it fetches. Safe for concurrent use.
type Sessions struct {
	max int
	// mu guards m, every session in it, and lastID.
	mu     sync.Mutex
	m      map[SessionKey]*session
	lastID uint64
}

type session struct {
	epoch int32 // the epoch the next request must carry
	parts []TopicPartition
	// gens is the Generation of each partition the session acquired
	// from: its member's acknowledgements name those deliveries.
	gens map[TopicPartition]uint64
	id   uint64 // which opening of the key's session this is
	// detach, if set, stops watching the connection that opened the
	// session (Attach); called when the session ends otherwise.
	detach func()
}

// end forgets a session: it no longer watches its connection.
func (ss *session) end() {
	if ss.detach != nil {
		ss.detach()
	}
}

// NewSessions returns a cache of at most max sessions
// (group.share.max.share.sessions).
func NewSessions(max int) *Sessions {
	return &Sessions{max: max, m: make(map[SessionKey]*session)}
}

// Open starts k's session (epoch 0) with parts, replacing an older one of
// k; the next request carries epoch 1. id names this opening (Attach,
// Drop).
func (s *Sessions) Open(k SessionKey, parts []TopicPartition) (id uint64, _ []TopicPartition, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[k]; old != nil {
		old.end()
		delete(s.m, k)
	}
	if len(s.m) >= s.max {
		return 0, nil, ErrSessionLimit
	}
	s.lastID++
	ss := &session{epoch: 1, id: s.lastID}
	if err := ss.add(parts); err != nil {
		return 0, nil, err
	}
	s.m[k] = ss
	return ss.id, slices.Clone(ss.parts), nil
}

// Attach gives opening id of k's session the function that stops
// watching its connection, called when the session ends; if that
// session has already ended, detach is called at once.
func (s *Sessions) Attach(k SessionKey, id uint64, detach func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.m[k]; ss != nil && ss.id == id {
		ss.detach = detach
		return
	}
	detach()
}

// Drop ends opening id of k's session, if it is still open: its
// connection closed (Kafka removes a session whose connection ends). It
// returns the session's partitions, or false.
func (s *Sessions) Drop(k SessionKey, id uint64) ([]TopicPartition, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[k]
	if ss == nil || ss.id != id {
		return nil, false
	}
	delete(s.m, k)
	return ss.parts, true
}

// Next checks an incremental request's epoch, adds and forgets partitions
// and moves the epoch on; it returns the session's partitions.
func (s *Sessions) Next(k SessionKey, epoch int32, add, forget []TopicPartition) ([]TopicPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[k]
	switch {
	case ss == nil:
		return nil, ErrSessionNotFound
	case epoch != ss.epoch:
		return nil, ErrSessionEpoch
	}
	ss.parts = slices.DeleteFunc(ss.parts, func(tp TopicPartition) bool { return slices.Contains(forget, tp) })
	for _, tp := range forget {
		delete(ss.gens, tp)
	}
	if err := ss.add(add); err != nil {
		return nil, err
	}
	ss.epoch++
	if ss.epoch < 0 { // Kafka's nextEpoch wraps to 1
		ss.epoch = 1
	}
	return slices.Clone(ss.parts), nil
}

// Close ends k's session and returns its partitions.
func (s *Sessions) Close(k SessionKey) ([]TopicPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[k]
	if ss == nil {
		return nil, ErrSessionNotFound
	}
	ss.end()
	delete(s.m, k)
	return ss.parts, nil
}

// CheckGeneration returns ErrSessionStale if k's session acquired from tp
// in a Generation other than gen. A share partition loaded again (a new
// leader epoch, or a failed write) holds the session's acquired records
// as available; were the session to go on, its member could acquire a
// record again and its acknowledgement of the earlier delivery would
// settle the new one (Kafka's acknowledgements name offsets, not
// deliveries). Call it under the partition's lock (Manager.Do).
func (s *Sessions) CheckGeneration(k SessionKey, tp TopicPartition, gen uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.m[k]; ss != nil {
		if g, ok := ss.gens[tp]; ok && g != gen {
			return ErrSessionStale
		}
	}
	return nil
}

// Acquired records that k's session acquired from tp in Generation gen.
func (s *Sessions) Acquired(k SessionKey, tp TopicPartition, gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.m[k]; ss != nil {
		if ss.gens == nil {
			ss.gens = make(map[TopicPartition]uint64)
		}
		ss.gens[tp] = gen
	}
}

// add merges parts into the session, kept sorted.
func (ss *session) add(parts []TopicPartition) error {
	for _, tp := range parts {
		i, found := slices.BinarySearchFunc(ss.parts, tp, compareTP)
		if found {
			continue
		}
		if len(ss.parts) >= MaxSessionPartitions {
			return ErrSessionTooLarge
		}
		ss.parts = slices.Insert(ss.parts, i, tp)
	}
	return nil
}

func compareTP(a, b TopicPartition) int {
	if c := slices.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}
