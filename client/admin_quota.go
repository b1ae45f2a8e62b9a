package client

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client quota keys, Kafka's names. Byte rates are bytes per second per
// broker, whole numbers; request_percentage is a share of one broker
// thread's time; controller_mutation_rate is partition mutations per
// second.
const (
	QuotaProducerByteRate       = "producer_byte_rate"
	QuotaConsumerByteRate       = "consumer_byte_rate"
	QuotaRequestPercentage      = "request_percentage"
	QuotaControllerMutationRate = "controller_mutation_rate"
)

// QuotaEntity is what a client quota applies to (Kafka's quota entity): a
// user, a client id, or a user's clients of an id. A component is absent
// when its name is "" and its Default flag unset; Default stands for
// Kafka's <default> entity of that type.
type QuotaEntity struct {
	User, ClientID               string
	DefaultUser, DefaultClientID bool
}

func (e QuotaEntity) String() string {
	var parts []string
	if s, ok := quotaComponent(e.User, e.DefaultUser); ok {
		parts = append(parts, "user="+s)
	}
	if s, ok := quotaComponent(e.ClientID, e.DefaultClientID); ok {
		parts = append(parts, "client-id="+s)
	}
	return strings.Join(parts, ",")
}

func quotaComponent(name string, def bool) (string, bool) {
	switch {
	case def:
		return "<default>", true
	case name != "":
		return name, true
	}
	return "", false
}

// ClientQuota is one entity's stored quotas, by key.
type ClientQuota struct {
	Entity QuotaEntity
	Values map[string]float64
}

// SetQuotas sets keys of an entity's quotas to values (Kafka's
// AlterClientQuotas); keys it does not name keep their values. A value
// the cluster refuses (an unknown key, a value not above 0, a byte rate
// that is not a whole number) gives a *KafkaError INVALID_REQUEST and
// changes nothing.
func (a *Admin) SetQuotas(ctx context.Context, e QuotaEntity, values map[string]float64) error {
	var ops []kmsg.AlterClientQuotasRequestEntryOp
	for _, k := range slices.Sorted(maps.Keys(values)) {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = k, values[k]
		ops = append(ops, op)
	}
	return a.alterQuotas(ctx, e, ops)
}

// DeleteQuotas removes keys from an entity's quotas; removing one that is
// not set does nothing.
func (a *Admin) DeleteQuotas(ctx context.Context, e QuotaEntity, keys ...string) error {
	var ops []kmsg.AlterClientQuotasRequestEntryOp
	for _, k := range keys {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Remove = k, true
		ops = append(ops, op)
	}
	return a.alterQuotas(ctx, e, ops)
}

// alterQuotas sends one entity's changes to the controller, which has
// applied them once it answers, so a following ListQuotas sees them.
func (a *Admin) alterQuotas(ctx context.Context, e QuotaEntity, ops []kmsg.AlterClientQuotasRequestEntryOp) error {
	if e.String() == "" {
		return &ConfigError{Option: "entity", Err: fmt.Errorf("a quota entity needs a user or a client id, named or default")}
	}
	if len(ops) == 0 {
		return &ConfigError{Option: "keys", Err: fmt.Errorf("no quota key given")}
	}
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	for _, c := range quotaRequestComponents(e) {
		x := kmsg.NewAlterClientQuotasRequestEntryEntity()
		x.Type, x.Name = c.typ, c.name
		entry.Entity = append(entry.Entity, x)
	}
	entry.Ops = ops
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = append(req.Entries, entry)
	return a.askController(ctx, req, func(resp kmsg.Response) error {
		rs := resp.(*kmsg.AlterClientQuotasResponse).Entries
		if len(rs) != 1 {
			return fmt.Errorf("client: AlterClientQuotas answered %d entities", len(rs))
		}
		return kafkaErr(rs[0].ErrorCode, rs[0].ErrorMessage)
	})
}

type quotaRequestComponent struct {
	typ  string
	name *string // nil: the default
}

func quotaRequestComponents(e QuotaEntity) []quotaRequestComponent {
	var out []quotaRequestComponent
	add := func(typ, name string, def bool) {
		switch {
		case def:
			out = append(out, quotaRequestComponent{typ: typ})
		case name != "":
			out = append(out, quotaRequestComponent{typ: typ, name: &name})
		}
	}
	add("user", e.User, e.DefaultUser)
	add("client-id", e.ClientID, e.DefaultClientID)
	return out
}

// ListQuotas returns the stored quotas of the entities that have every
// component of match (the named user or client id, or its default; Kafka's
// DescribeClientQuotas, not strict), in the cluster's order: by user then
// client id. A zero match lists every entity.
func (a *Admin) ListQuotas(ctx context.Context, match QuotaEntity) ([]ClientQuota, error) {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	for _, c := range quotaRequestComponents(match) {
		x := kmsg.NewDescribeClientQuotasRequestComponent()
		x.EntityType, x.Match, x.MatchType = c.typ, c.name, kmsg.QuotasMatchTypeExact
		if c.name == nil {
			x.MatchType = kmsg.QuotasMatchTypeDefault
		}
		req.Components = append(req.Components, x)
	}
	var out []ClientQuota
	err := a.askController(ctx, req, func(resp kmsg.Response) error {
		r := resp.(*kmsg.DescribeClientQuotasResponse)
		if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
			return err
		}
		out = out[:0]
		for _, entry := range r.Entries {
			q := ClientQuota{Values: make(map[string]float64, len(entry.Values))}
			for _, c := range entry.Entity {
				name, def := "", c.Name == nil
				if !def {
					name = *c.Name
				}
				switch c.Type {
				case "user":
					q.Entity.User, q.Entity.DefaultUser = name, def
				case "client-id":
					q.Entity.ClientID, q.Entity.DefaultClientID = name, def
				}
			}
			for _, v := range entry.Values {
				q.Values[v.Key] = v.Value
			}
			out = append(out, q)
		}
		return nil
	})
	return out, err
}
