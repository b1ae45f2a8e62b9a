package kafkaapi

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// Quota entity types (ClientQuotaEntity).
const (
	quotaUser     = "user"
	quotaClientID = "client-id"
	quotaIP       = "ip"
)

// startDescribeClientQuotas answers DescribeClientQuotas 0-1 as Kafka's
// KRaft brokers do (ClientQuotasImage.describe): DESCRIBE_CONFIGS on the
// cluster, the filter checked as Kafka checks it, then every stored entity
// it matches (matchQuotaFilter), sorted by user then client id.
func (s *Server) startDescribeClientQuotas(req *kmsg.DescribeClientQuotasRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
		err := checkQuotaFilter(req.Components)
		if !s.authorizeCluster(ctx, acl.OpDescribeConfigs) {
			err = errClusterAuth
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), errorMessage(err)
			return resp, nil
		}
		resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
		cq, ok := s.backend.(ClientQuotas)
		if !ok {
			return resp, nil
		}
		for _, q := range cq.ClientQuotas() {
			if !matchQuotaFilter(q.Entity, req.Components, req.Strict) {
				continue
			}
			re := kmsg.NewDescribeClientQuotasResponseEntry()
			re.Entity = quotaComponents(q.Entity)
			for _, v := range q.Values {
				rv := kmsg.NewDescribeClientQuotasResponseEntryValue()
				rv.Key, rv.Value = v.Key, v.Value
				re.Values = append(re.Values, rv)
			}
			resp.Entries = append(resp.Entries, re)
		}
		return resp, nil
	}
}

// quotaComponents is an entity as the response lists it: user first.
func quotaComponents(e QuotaEntity) []kmsg.DescribeClientQuotasResponseEntryEntity {
	var out []kmsg.DescribeClientQuotasResponseEntryEntity
	for _, c := range []struct {
		typ  string
		name QuotaName
	}{{quotaUser, e.User}, {quotaClientID, e.ClientID}} {
		if c.name.Kind == QuotaAbsent {
			continue
		}
		rc := kmsg.NewDescribeClientQuotasResponseEntryEntity()
		rc.Type = c.typ
		if c.name.Kind == QuotaNamed {
			rc.Name = kmsg.StringPtr(c.name.Name)
		}
		out = append(out, rc)
	}
	return out
}

// matchQuotaFilter is Kafka's match of a checked filter: every component
// matches (EXACT: the type with that name; DEFAULT: the type's default;
// SPECIFIED: the type, with any name or the default, as Kafka's
// ClientQuotasImage indexes it), and with strict the entity has no other
// type. An ip component matches nothing: no ip entity is stored.
func matchQuotaFilter(e QuotaEntity, components []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	types := 0
	for _, c := range components {
		var n QuotaName
		switch c.EntityType {
		case quotaUser:
			n = e.User
		case quotaClientID:
			n = e.ClientID
		}
		switch {
		case n.Kind == QuotaAbsent:
			return false
		case c.MatchType == kmsg.QuotasMatchTypeExact && (n.Kind != QuotaNamed || n.Name != *c.Match):
			return false
		case c.MatchType == kmsg.QuotasMatchTypeDefault && n.Kind != QuotaDefault:
			return false
		}
		types++
	}
	if strict {
		have := 0
		for _, n := range []QuotaName{e.User, e.ClientID} {
			if n.Kind != QuotaAbsent {
				have++
			}
		}
		return have == types
	}
	return true
}

// checkQuotaFilter is Kafka's validation of a DescribeClientQuotas
// filter: known entity types, each once, a match string exactly where
// the match type takes one, and no ip component beside user or
// client-id components.
func checkQuotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) error {
	seen := map[string]bool{}
	for _, c := range components {
		switch {
		case c.EntityType == "":
			return fmt.Errorf("%w: invalid empty entity type", kerr.InvalidRequest)
		case seen[c.EntityType]:
			return fmt.Errorf("%w: entity type %s cannot appear more than once in the filter", kerr.InvalidRequest, c.EntityType)
		case !slices.Contains([]string{quotaUser, quotaClientID, quotaIP}, c.EntityType):
			return fmt.Errorf("%w: unsupported entity type %s", kerr.UnsupportedVersion, c.EntityType)
		}
		seen[c.EntityType] = true
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return fmt.Errorf("%w: MATCH_TYPE_EXACT with a null match string", kerr.InvalidRequest)
			}
		case kmsg.QuotasMatchTypeDefault, kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return fmt.Errorf("%w: match type %d with a match string", kerr.InvalidRequest, c.MatchType)
			}
		default:
			return fmt.Errorf("%w: unknown match type %d", kerr.InvalidRequest, c.MatchType)
		}
	}
	if seen[quotaIP] && (seen[quotaUser] || seen[quotaClientID]) {
		return fmt.Errorf("%w: an ip filter component cannot be used with user or client-id components", kerr.InvalidRequest)
	}
	return nil
}
