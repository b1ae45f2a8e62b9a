package quota

import (
	"errors"
	"math"
	"time"
)

// ErrThrottlingQuotaExceeded is what a strict Mutation's Record returns
// when the entity's controller_mutation_rate is already exceeded
// (Kafka's THROTTLING_QUOTA_EXCEEDED).
var ErrThrottlingQuotaExceeded = errors.New("quota: the controller mutation quota is exceeded")

// Mutation charges one CreateTopics, CreatePartitions or DeleteTopics
// request's partition mutations to its entity's token bucket (KIP-599).
// Strict (the request versions that know THROTTLING_QUOTA_EXCEEDED):
// a mutation is refused once the bucket is empty. Permissive (older
// versions): every mutation is recorded and the request throttled after.
// A Mutation is used by one request at a time.
type Mutation struct {
	m              *Manager
	user, clientID string
	strict         bool
	throttle       time.Duration // the last throttle decided
	at             time.Time     // when it was
}

// Mutation returns the quota of one request of user and clientID.
func (m *Manager) Mutation(user, clientID string, strict bool) *Mutation {
	return &Mutation{m: m, user: user, clientID: clientID, strict: strict}
}

// Check refuses a strict Mutation's next mutation while the entity's
// bucket is empty (Kafka's checkQuotas before record), with
// ErrThrottlingQuotaExceeded and the time until it refills; a permissive
// or nil Mutation never refuses.
func (q *Mutation) Check() error {
	if q == nil || !q.strict {
		return nil
	}
	quota, e, ok := q.m.lookup(ControllerMutation, q.user, q.clientID)
	if !ok {
		return nil
	}
	quota = math.Max(quota, 1e-9)
	m := q.m
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensorsFor(e, now)
	if tokens := s.mutations.measure(m.wc, quota, m.ms(now)); tokens < 0 {
		q.throttle, q.at = throttleMs(-tokens/quota, 1000), now
		return ErrThrottlingQuotaExceeded
	}
	return nil
}

// Record charges n mutated partitions (after Check allowed them, or in a
// permissive Mutation regardless). A permissive Mutation that empties
// the bucket throttles its request until the bucket is back at zero.
func (q *Mutation) Record(n int) {
	if q == nil || n <= 0 {
		return
	}
	quota, e, ok := q.m.lookup(ControllerMutation, q.user, q.clientID)
	m := q.m
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensorsFor(e, now)
	t := m.ms(now)
	s.mutated.record(m.wc, float64(n), t)
	if !ok {
		return
	}
	quota = math.Max(quota, 1e-9)
	s.mutations.record(m.wc, quota, float64(n), t)
	if tokens := s.mutations.tokens; !q.strict && tokens < 0 {
		q.throttle, q.at = throttleMs(-tokens/quota, 1000), now
	}
}

// Throttle is the throttle last decided, less the time since (Kafka's
// AbstractControllerMutationQuota.throttleTime); zero if none.
func (q *Mutation) Throttle() time.Duration {
	if q == nil || q.throttle <= 0 {
		return 0
	}
	return max(0, q.throttle-q.m.cfg.Now().Sub(q.at))
}
