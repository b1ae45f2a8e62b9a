package metadata

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
)

// Client quotas (Kafka's KIP-546 configuration): rates keyed by a quota
// entity, a user, a client id or both, each named or the default. The
// cluster stores them through the log, so every node resolves the same
// quota at the same index (ClientQuota); enforcing them is the brokers'.

// TypeAlterClientQuotas is AlterClientQuotas' command type.
const TypeAlterClientQuotas CommandType = 27

// Quota keys, Kafka's names (QuotaConfigs). Byte rates are longs in Kafka,
// the others doubles.
const (
	QuotaConsumerByteRate       = "consumer_byte_rate"
	QuotaControllerMutationRate = "controller_mutation_rate"
	QuotaProducerByteRate       = "producer_byte_rate"
	QuotaRequestPercentage      = "request_percentage"
)

// QuotaKeys are the keys a user, client-id or user+client-id entity takes,
// sorted.
var QuotaKeys = []string{QuotaConsumerByteRate, QuotaControllerMutationRate, QuotaProducerByteRate, QuotaRequestPercentage}

// Bounds on what clients can make the cluster store.
const (
	// MaxQuotaEntities bounds the entities that hold quotas.
	MaxQuotaEntities = 10000
	// MaxQuotaAlterations bounds the entities one AlterClientQuotas
	// changes.
	MaxQuotaAlterations = 1000
	// MaxQuotaNameLen bounds an entity name.
	MaxQuotaNameLen = MaxScramUserLen
	// MaxQuotaOps bounds the ops of one alteration: a valid one names
	// each key at most once.
	MaxQuotaOps = 64
)

// QuotaNameKind says whether an entity has a component of a type (user or
// client-id), and whether it names one or is the default.
type QuotaNameKind uint8

// Name kinds. The order is the sort order of entities.
const (
	QuotaAbsent  QuotaNameKind = 0 // no component of this type
	QuotaDefault QuotaNameKind = 1 // <default>: Kafka's null name
	QuotaNamed   QuotaNameKind = 2 // a name
)

// QuotaName is one component of an entity.
type QuotaName struct {
	Kind QuotaNameKind
	Name string // for QuotaNamed only
}

// NamedQuota is the component that names name.
func NamedQuota(name string) QuotaName { return QuotaName{Kind: QuotaNamed, Name: name} }

// DefaultQuota is the default component.
func DefaultQuota() QuotaName { return QuotaName{Kind: QuotaDefault} }

func (n QuotaName) String() string {
	switch n.Kind {
	case QuotaDefault:
		return "<default>"
	case QuotaNamed:
		return n.Name
	}
	return "-"
}

func compareQuotaNames(a, b QuotaName) int {
	if a.Kind != b.Kind {
		return int(a.Kind) - int(b.Kind)
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// QuotaEntity is what a quota applies to: a user, a client id, or a user's
// clients of an id; at least one of the two is present.
type QuotaEntity struct {
	User     QuotaName
	ClientID QuotaName
}

func (e QuotaEntity) String() string {
	switch {
	case e.User.Kind == QuotaAbsent:
		return "client-id=" + e.ClientID.String()
	case e.ClientID.Kind == QuotaAbsent:
		return "user=" + e.User.String()
	}
	return "user=" + e.User.String() + ",client-id=" + e.ClientID.String()
}

// CompareQuotaEntities orders entities by user then client id, absent
// before default before names.
func CompareQuotaEntities(a, b QuotaEntity) int {
	if c := compareQuotaNames(a.User, b.User); c != 0 {
		return c
	}
	return compareQuotaNames(a.ClientID, b.ClientID)
}

// QuotaOp sets a key to Value, or removes it.
type QuotaOp struct {
	Key    string
	Value  float64 // ignored with Remove
	Remove bool
}

// QuotaAlteration is the changes to one entity's quotas.
type QuotaAlteration struct {
	Entity QuotaEntity
	Ops    []QuotaOp
}

// AlterClientQuotas changes the quotas of entities, all or none: every
// alteration must pass CheckQuotaAlteration, no entity may appear twice,
// and at most MaxQuotaEntities may hold quotas afterwards. Setting a key
// replaces its value; removing one that is not set does nothing; an entity
// left without keys is forgotten.
//
// Result: none.
type AlterClientQuotas struct {
	Alterations []QuotaAlteration
}

// Type implements Command.
func (AlterClientQuotas) Type() CommandType { return TypeAlterClientQuotas }

// ErrInvalidQuota rejects a quota alteration. [INVALID_REQUEST]
var ErrInvalidQuota = errors.New("metadata: invalid client quota")

// ErrTooManyQuotas rejects an AlterClientQuotas past MaxQuotaEntities or
// MaxQuotaAlterations. [POLICY_VIOLATION]
var ErrTooManyQuotas = errors.New("metadata: too many client quotas")

// QuotaError says why an alteration is refused; it wraps ErrInvalidQuota
// or ErrTooManyQuotas.
type QuotaError struct {
	Entity QuotaEntity
	Reason string
	Err    error
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("client quota %v: %s", e.Entity, e.Reason)
}

func (e *QuotaError) Unwrap() error { return e.Err }

// CheckQuotaAlteration checks one alteration as Kafka's controller does,
// and a little more: a user or client-id component or both, names
// non-empty and at most MaxQuotaNameLen bytes, each key once (at most
// MaxQuotaOps ops), set keys
// among QuotaKeys with a finite value above 0, and byte rates whole
// numbers that fit a long. Removing an unknown key is allowed, as in
// Kafka. It depends on nothing but a, so a proposer can check each entity
// of a request on its own.
func CheckQuotaAlteration(a QuotaAlteration) error {
	bad := func(format string, args ...any) error {
		return &QuotaError{Entity: a.Entity, Reason: fmt.Sprintf(format, args...), Err: ErrInvalidQuota}
	}
	if a.Entity.User.Kind == QuotaAbsent && a.Entity.ClientID.Kind == QuotaAbsent {
		return bad("invalid empty client quota entity")
	}
	for _, n := range []QuotaName{a.Entity.User, a.Entity.ClientID} {
		switch {
		case n.Kind > QuotaNamed:
			return bad("unknown name kind %d", n.Kind)
		case n.Kind != QuotaNamed && n.Name != "":
			return bad("a default or absent component with a name")
		case n.Kind == QuotaNamed && n.Name == "":
			return bad("an empty name is not supported")
		case len(n.Name) > MaxQuotaNameLen:
			return bad("a name longer than %d bytes", MaxQuotaNameLen)
		}
	}
	if len(a.Ops) > MaxQuotaOps {
		return bad("more than %d quota keys", MaxQuotaOps)
	}
	for i, op := range a.Ops {
		if slices.ContainsFunc(a.Ops[:i], func(o QuotaOp) bool { return o.Key == op.Key }) {
			return bad("duplicate quota key %s", op.Key)
		}
		if op.Remove {
			continue
		}
		if err := checkQuotaValue(op.Key, op.Value); err != "" {
			return bad("%s", err)
		}
	}
	return nil
}

// checkQuotaValue returns why a key cannot take a value, "" if it can.
func checkQuotaValue(key string, v float64) string {
	switch {
	case !slices.Contains(QuotaKeys, key):
		return "invalid configuration key " + key
	case math.IsNaN(v) || math.IsInf(v, 0) || v <= 0:
		return fmt.Sprintf("%s must be above 0, not %v", key, v)
	case key == QuotaProducerByteRate || key == QuotaConsumerByteRate:
		// Kafka's LONG check: whole within 1e-6, and within a long.
		if math.Abs(math.Round(v)-v) > 1e-6 || v >= math.MaxInt64 {
			return fmt.Sprintf("configuration %s must be a Long value", key)
		}
	}
	return ""
}

func (s *Snapshot) alterClientQuotas(c AlterClientQuotas) (any, error) {
	if len(c.Alterations) > MaxQuotaAlterations {
		return nil, &QuotaError{Reason: fmt.Sprintf("more than %d entities in one request", MaxQuotaAlterations), Err: ErrTooManyQuotas}
	}
	for i, a := range c.Alterations {
		if err := CheckQuotaAlteration(a); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(c.Alterations[:i], func(o QuotaAlteration) bool { return o.Entity == a.Entity }) {
			return nil, &QuotaError{Entity: a.Entity, Reason: "duplicate entity", Err: ErrInvalidQuota}
		}
	}
	quotas := cloneMap(s.quotas)
	for _, a := range c.Alterations {
		values := maps.Clone(quotas[a.Entity])
		for _, op := range a.Ops {
			if op.Remove {
				delete(values, op.Key)
				continue
			}
			if values == nil {
				values = make(map[string]float64, len(a.Ops))
			}
			values[op.Key] = op.Value
		}
		if len(values) == 0 {
			delete(quotas, a.Entity)
		} else {
			quotas[a.Entity] = values
		}
	}
	if len(quotas) > MaxQuotaEntities && len(quotas) > len(s.quotas) {
		return nil, &QuotaError{Reason: fmt.Sprintf("more than %d entities with quotas", MaxQuotaEntities), Err: ErrTooManyQuotas}
	}
	if len(quotas) == 0 {
		quotas = nil
	}
	s.quotas = quotas
	return nil, nil
}

// QuotaValue is one key's value.
type QuotaValue struct {
	Key   string
	Value float64
}

// ClientQuotaEntry is one entity's quotas, sorted by key.
type ClientQuotaEntry struct {
	Entity QuotaEntity
	Values []QuotaValue
}

// ClientQuotas returns every entity that holds quotas, sorted by
// CompareQuotaEntities.
func (s *Snapshot) ClientQuotas() []ClientQuotaEntry {
	entities := slices.SortedFunc(maps.Keys(s.quotas), CompareQuotaEntities)
	out := make([]ClientQuotaEntry, 0, len(entities))
	for _, e := range entities {
		out = append(out, ClientQuotaEntry{Entity: e, Values: quotaValues(s.quotas[e])})
	}
	return out
}

func quotaValues(m map[string]float64) []QuotaValue {
	out := make([]QuotaValue, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, QuotaValue{Key: k, Value: m[k]})
	}
	return out
}

// ClientQuota resolves the quota of key for a client of a user and a
// client id, in Kafka's precedence (design_quotasconfig), the first entity
// that sets the key winning:
//
//	/users/<user>/clients/<client-id>
//	/users/<user>/clients/<default>
//	/users/<user>
//	/users/<default>/clients/<client-id>
//	/users/<default>/clients/<default>
//	/users/<default>
//	/clients/<client-id>
//	/clients/<default>
//
// Each key resolves on its own. An empty user or client id names nothing
// (entity names are never empty), so it reaches only the default entries.
func (s *Snapshot) ClientQuota(user, clientID, key string) (float64, bool) {
	v, _, _, ok := s.ClientQuotaScope(user, clientID, key)
	return v, ok
}

// ClientQuotaScope is ClientQuota, also telling whether the entity that
// set it names a user (by name or as the default) and a client id: the
// clients it matches share one rate in those parts (Kafka's quota
// sensors), e.g. every client id of a user under a /users/<user> quota.
func (s *Snapshot) ClientQuotaScope(user, clientID, key string) (quota float64, byUser, byClient, ok bool) {
	if len(s.quotas) == 0 {
		return 0, false, false, false
	}
	u, c, d, none := NamedQuota(user), NamedQuota(clientID), DefaultQuota(), QuotaName{}
	for _, e := range [...]QuotaEntity{{u, c}, {u, d}, {u, none}, {d, c}, {d, d}, {d, none}, {none, c}, {none, d}} {
		if v, ok := s.quotas[e][key]; ok {
			return v, e.User != none, e.ClientID != none, true
		}
	}
	return 0, false, false, false
}

func quotasEqual(a, b map[QuotaEntity]map[string]float64) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]float64) bool { return maps.Equal(x, y) })
}
