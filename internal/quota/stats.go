package quota

// EntityStats is what a Manager measures of one entity, for metrics.
type EntityStats struct {
	User, ClientID  string
	ProduceByteRate float64 // bytes per second
	FetchByteRate   float64 // bytes per second
	RequestPercent  float64 // request handling time, % of one thread
	MutationRate    float64 // partitions mutated per second
	// ThrottleMs is the mean throttle given per kind in the window,
	// indexed by Kind (Kafka's throttle-time).
	ThrottleMs [numKinds]float64
}

// OverflowUser is the user of the entity that the entities past
// MaxEntities share.
const OverflowUser = overflowUser

// Stats measures every tracked entity now, after dropping idle ones. It
// returns at most MaxEntities+1 entries, in no particular order.
func (m *Manager) Stats() []EntityStats {
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	t := m.ms(now)
	out := make([]EntityStats, 0, len(m.entities))
	for e, s := range m.entities {
		st := EntityStats{
			User: e.user, ClientID: e.clientID,
			ProduceByteRate: s.rates[Produce].rate(m.wc, t),
			FetchByteRate:   s.rates[Fetch].rate(m.wc, t),
			RequestPercent:  s.rates[Request].rate(m.wc, t),
			MutationRate:    s.mutated.rate(m.wc, t),
		}
		for k := range st.ThrottleMs {
			st.ThrottleMs[k] = s.throttles[k].avg(m.wc, t)
		}
		out = append(out, st)
	}
	return out
}

// Kinds lists every quota kind, in order.
func Kinds() []Kind { return []Kind{Produce, Fetch, Request, ControllerMutation} }
