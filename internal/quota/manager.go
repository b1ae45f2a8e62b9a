package quota

import (
	"math"
	"sync"
	"time"
)

// Kind is a quota type; its Key is the quota's name in Kafka's configs.
type Kind uint8

const (
	Produce            Kind = iota // producer_byte_rate: bytes of Produce requests per second
	Fetch                          // consumer_byte_rate: bytes of Fetch responses per second
	Request                        // request_percentage: request handling time, % of one thread
	ControllerMutation             // controller_mutation_rate: partitions created or deleted per second
	numKinds
)

var kindKeys = [numKinds]string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}
var kindNames = [numKinds]string{"produce", "fetch", "request", "controller_mutation"}

// Key is the quota's config name, as Source takes it.
func (k Kind) Key() string { return kindKeys[k] }

// String is the kind's short name, as metrics label it.
func (k Kind) String() string { return kindNames[k] }

// Source returns the quota of a kind for a user and client id, with
// Kafka's precedence of user/client-id/default entities applied; false
// when none applies.
type Source interface {
	ClientQuota(user, clientID, key string) (float64, bool)
}

// ScopedSource is a Source that also tells which parts of the client's
// identity the entity whose quota applies names: Kafka's sensors are
// named by those parts, so the clients a user-level quota matches share
// one rate, and only a user+client-id quota is per client. A plain Source
// is taken as naming both.
type ScopedSource interface {
	Source
	ClientQuotaScope(user, clientID, key string) (quota float64, byUser, byClient, ok bool)
}

// Defaults, Kafka's where Kafka has one.
const (
	DefaultSamples     = 11           // quota.window.num
	DefaultWindow      = time.Second  // quota.window.size.seconds
	DefaultIdleExpiry  = time.Hour    // Kafka's InactiveSensorExpirationTimeSeconds
	DefaultMaxEntities = 10_000       // ours: Kafka leaves it unbounded
	sweepEvery         = time.Minute  // how often idle entities are looked for
	fullSweepEvery     = time.Second  // how often, when MaxEntities are tracked
	overflowUser       = "<overflow>" // the shared entity past MaxEntities
)

// Config tunes a Manager; zero fields take the defaults.
type Config struct {
	Samples     int           // windows kept (quota.window.num); default 11
	Window      time.Duration // one window (quota.window.size.seconds); default 1s
	IdleExpiry  time.Duration // an entity unused this long is dropped; default 1h
	MaxEntities int           // entities tracked; default 10,000
	Now         func() time.Time
}

// Manager records clients' usage and decides their throttles. It is safe
// for concurrent use.
type Manager struct {
	src  Source
	cfg  Config
	wc   windowConfig
	base time.Time // the zero of the ms clock the stats use

	mu        sync.Mutex          // guards entities, lastSweep and every sensor in an entity
	entities  map[entity]*sensors // at most cfg.MaxEntities, plus the overflow entity
	lastSweep time.Time
}

type entity struct{ user, clientID string }

// sensors are one entity's stats.
type sensors struct {
	rates     [ControllerMutation]sampledStat // produce, fetch, request values
	throttles [numKinds]sampledStat           // throttle times given, in ms
	mutations tokenBucket
	mutated   sampledStat // partitions mutated, for the rate metric
	lastUsed  time.Time
}

// New returns a Manager that reads quotas from src.
func New(src Source, cfg Config) *Manager {
	if cfg.Samples <= 1 {
		cfg.Samples = DefaultSamples
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.IdleExpiry <= 0 {
		cfg.IdleExpiry = DefaultIdleExpiry
	}
	if cfg.MaxEntities <= 0 {
		cfg.MaxEntities = DefaultMaxEntities
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	now := cfg.Now()
	return &Manager{
		src: src, cfg: cfg,
		wc:        windowConfig{samples: cfg.Samples, window: cfg.Window.Milliseconds()},
		base:      now.Add(-time.Hour), // keeps ms positive
		entities:  make(map[entity]*sensors),
		lastSweep: now,
	}
}

// ms is t on the stats' millisecond clock.
func (m *Manager) ms(t time.Time) int64 { return t.Sub(m.base).Milliseconds() }

// sensorsFor returns e's sensors, creating them; the caller holds mu.
func (m *Manager) sensorsFor(e entity, now time.Time) *sensors {
	if s := m.entities[e]; s != nil {
		s.lastUsed = now
		return s
	}
	since := now.Sub(m.lastSweep)
	if since >= sweepEvery || len(m.entities) >= m.cfg.MaxEntities && since >= fullSweepEvery {
		m.sweep(now)
	}
	if len(m.entities) >= m.cfg.MaxEntities {
		e = entity{user: overflowUser}
		if s := m.entities[e]; s != nil {
			s.lastUsed = now
			return s
		}
	}
	s := &sensors{lastUsed: now}
	m.entities[e] = s
	return s
}

// sweep drops the entities idle for IdleExpiry; the caller holds mu.
func (m *Manager) sweep(now time.Time) {
	m.lastSweep = now
	for e, s := range m.entities {
		if now.Sub(s.lastUsed) >= m.cfg.IdleExpiry {
			delete(m.entities, e)
		}
	}
}

// lookup resolves the quota of kind k of a client and the entity whose
// sensors the client uses for k (ScopedSource); without a quota the
// client's own entity.
func (m *Manager) lookup(k Kind, user, clientID string) (float64, entity, bool) {
	e := entity{user, clientID}
	sc, scoped := m.src.(ScopedSource)
	if !scoped {
		quota, ok := m.src.ClientQuota(user, clientID, k.Key())
		return quota, e, ok
	}
	quota, byUser, byClient, ok := sc.ClientQuotaScope(user, clientID, k.Key())
	if ok && !byUser {
		e.user = ""
	}
	if ok && !byClient {
		e.clientID = ""
	}
	return quota, e, ok
}

// Record adds value (bytes, or for Request a RequestPercent) to the
// entity's rate of kind and returns how long the client must be throttled
// for the rate to come back to its quota: (rate - quota) / quota times the
// measured window, as Kafka's QuotaUtils.throttleTime; request-quota
// throttles are capped at one window, as Kafka caps them. Zero when the
// entity has no quota of kind or is within it.
func (m *Manager) Record(k Kind, user, clientID string, value float64) time.Duration {
	quota, e, limited := m.lookup(k, user, clientID)
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensorsFor(e, now)
	t := m.ms(now)
	st := &s.rates[k]
	st.record(m.wc, value, t)
	if !limited {
		return 0
	}
	rate := st.rate(m.wc, t)
	if rate <= quota {
		return 0
	}
	d := throttleMs((rate-quota)/math.Max(quota, 1e-9), st.windowSize(m.wc, t))
	if k == Request {
		d = min(d, m.cfg.Window)
	}
	return d
}

// throttleMs is ratio windows of windowMs, rounded to a millisecond and
// kept within what a throttle_time_ms field holds.
func throttleMs(ratio float64, windowMs int64) time.Duration {
	ms := math.Round(ratio * float64(windowMs))
	return time.Duration(min(ms, math.MaxInt32)) * time.Millisecond
}

// Unrecord takes value back from the entity's rate of kind (Kafka's
// unrecordQuotaSensor: a throttled Fetch returns nothing).
func (m *Manager) Unrecord(k Kind, user, clientID string, value float64) {
	_, e, _ := m.lookup(k, user, clientID)
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensorsFor(e, now)
	s.rates[k].record(m.wc, -value, m.ms(now))
}

// MaxValueInWindow is what the entity could use of kind in one quota span
// without being throttled for sure: quota × (samples-1) windows (Kafka's
// getMaxValueInQuotaWindow, which bounds a Fetch's max bytes). False
// without a quota.
func (m *Manager) MaxValueInWindow(k Kind, user, clientID string) (float64, bool) {
	quota, ok := m.src.ClientQuota(user, clientID, k.Key())
	if !ok {
		return 0, false
	}
	return quota * float64(m.cfg.Samples-1) * m.cfg.Window.Seconds(), true
}

// RecordThrottle records a throttle the client was given for kind, for
// the throttle-time metric (Kafka's throttle-time sensor, an average).
func (m *Manager) RecordThrottle(k Kind, user, clientID string, d time.Duration) {
	if d <= 0 {
		return
	}
	_, e, _ := m.lookup(k, user, clientID)
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensorsFor(e, now)
	s.throttles[k].record(m.wc, float64(d.Milliseconds()), m.ms(now))
}

// RequestPercent is Kafka's request-time value of d of handling: the
// percentage of one thread's second it took.
func RequestPercent(d time.Duration) float64 {
	return float64(d.Nanoseconds()) * 100 / float64(time.Second)
}
