package kafkaapi

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// ClientQuotas is an optional capability of a Backend, found by type
// assertion: client quotas stored in the cluster's replicated metadata
// (KIP-546). A backend without it answers DescribeClientQuotas with no
// entity and AlterClientQuotas INVALID_REQUEST.
type ClientQuotas interface {
	// ClientQuotas returns every entity that holds quotas, sorted by user
	// then client id (absent, then default, then names), each with its
	// values sorted by key. It reads local state and must not block.
	ClientQuotas() []QuotaEntry
	// AlterClientQuotas checks each alteration and, unless validateOnly,
	// stores the valid ones through the cluster's replicated metadata. It
	// returns one error per alteration (nil when stored), or an error for
	// the whole request. Expected errors: kerr.InvalidRequest (a bad
	// entity, key or value), kerr.PolicyViolation (too many entities),
	// kerr.NotController, kerr.RequestTimedOut.
	AlterClientQuotas(ctx context.Context, alterations []QuotaAlteration, validateOnly bool) ([]error, error)
}

// QuotaNameKind says whether a quota entity has a component of a type,
// and whether it names one or is the default.
type QuotaNameKind uint8

// Name kinds, in their sort order.
const (
	QuotaAbsent  QuotaNameKind = 0
	QuotaDefault QuotaNameKind = 1 // Kafka's null name, shown <default>
	QuotaNamed   QuotaNameKind = 2
)

// QuotaName is one component of a quota entity.
type QuotaName struct {
	Kind QuotaNameKind
	Name string // for QuotaNamed
}

// QuotaEntity is a user, a client id, or both.
type QuotaEntity struct {
	User, ClientID QuotaName
}

// QuotaValue is one quota key's value.
type QuotaValue struct {
	Key   string
	Value float64
}

// QuotaEntry is one entity's quotas.
type QuotaEntry struct {
	Entity QuotaEntity
	Values []QuotaValue
}

// QuotaOp sets a key, or removes it.
type QuotaOp struct {
	Key    string
	Value  float64
	Remove bool
}

// QuotaAlteration is the changes to one entity's quotas.
type QuotaAlteration struct {
	Entity QuotaEntity
	Ops    []QuotaOp
}

// startAlterClientQuotas answers AlterClientQuotas 0-1 as Kafka's
// controller does: ALTER_CONFIGS on the cluster (else every entry
// CLUSTER_AUTHORIZATION_FAILED), each entry checked on its own (an
// unknown or repeated entity type, an empty name, an entity given twice,
// an unknown key, a duplicate key or a bad value is INVALID_REQUEST), the
// valid ones stored unless validate_only. Quotas of ip entities are not
// kept: INVALID_REQUEST.
func (s *Server) startAlterClientQuotas(req *kmsg.AlterClientQuotasRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		errs := s.alterClientQuotas(ctx, req)
		for i, e := range req.Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			for _, c := range e.Entity {
				rc := kmsg.NewAlterClientQuotasResponseEntryEntity()
				rc.Type, rc.Name = c.Type, c.Name
				re.Entity = append(re.Entity, rc)
			}
			re.ErrorCode, re.ErrorMessage = ErrorCode(errs[i]), errorMessage(errs[i])
			resp.Entries = append(resp.Entries, re)
		}
		return resp, nil
	}
}

// alterClientQuotas returns one error per entry of req.
func (s *Server) alterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) []error {
	errs := make([]error, len(req.Entries))
	fill := func(err error) []error {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs
	}
	if !s.authorizeCluster(ctx, acl.OpAlterConfigs) {
		return fill(kerr.ClusterAuthorizationFailed)
	}
	cq, ok := s.backend.(ClientQuotas)
	if !ok {
		return fill(fmt.Errorf("%w: this node keeps no client quotas", kerr.InvalidRequest))
	}
	var alts []QuotaAlteration
	var at []int // alts[j] is entry at[j]
	seen := make(map[QuotaEntity]bool, len(req.Entries))
	for i, e := range req.Entries {
		ent, err := quotaEntityOf(e.Entity)
		switch {
		case err != nil:
			errs[i] = err
			continue
		case seen[ent]:
			errs[i] = fmt.Errorf("%w: ignoring duplicate entity %s", kerr.InvalidRequest, quotaEntityString(ent))
			continue
		}
		seen[ent] = true
		a := QuotaAlteration{Entity: ent}
		for _, op := range e.Ops {
			a.Ops = append(a.Ops, QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		alts, at = append(alts, a), append(at, i)
	}
	if len(alts) == 0 {
		return errs
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	results, err := cq.AlterClientQuotas(ctx, alts, req.ValidateOnly)
	if err != nil {
		return fill(err)
	}
	for j, i := range at {
		if j < len(results) {
			errs[i] = results[j]
		}
	}
	return errs
}

// quotaEntityOf reads a request's entity as Kafka's controller does
// (validateEntity): at least one component, each type once, user and
// client-id only, no empty name.
func quotaEntityOf(components []kmsg.AlterClientQuotasRequestEntryEntity) (QuotaEntity, error) {
	var e QuotaEntity
	if len(components) == 0 {
		return e, fmt.Errorf("%w: invalid empty client quota entity", kerr.InvalidRequest)
	}
	for _, c := range components {
		var n *QuotaName
		switch c.Type {
		case quotaUser:
			n = &e.User
		case quotaClientID:
			n = &e.ClientID
		case quotaIP:
			return e, fmt.Errorf("%w: this cluster keeps no ip quotas", kerr.InvalidRequest)
		default:
			return e, fmt.Errorf("%w: unhandled client quota entity type: %s", kerr.InvalidRequest, c.Type)
		}
		switch {
		case n.Kind != QuotaAbsent:
			return e, fmt.Errorf("%w: duplicate entity entry %s", kerr.InvalidRequest, c.Type)
		case c.Name == nil:
			*n = QuotaName{Kind: QuotaDefault}
		case *c.Name == "":
			return e, fmt.Errorf("%w: empty %s not supported", kerr.InvalidRequest, c.Type)
		default:
			*n = QuotaName{Kind: QuotaNamed, Name: *c.Name}
		}
	}
	return e, nil
}

func quotaEntityString(e QuotaEntity) string {
	name := func(n QuotaName) string {
		if n.Kind == QuotaDefault {
			return "<default>"
		}
		return n.Name
	}
	switch {
	case e.User.Kind == QuotaAbsent:
		return "client-id=" + name(e.ClientID)
	case e.ClientID.Kind == QuotaAbsent:
		return "user=" + name(e.User)
	}
	return "user=" + name(e.User) + ",client-id=" + name(e.ClientID)
}
