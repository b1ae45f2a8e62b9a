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
// KRaft brokers do (ClientQuotasImage.describe) for a cluster where no
// quota is set, which is always the case here: the node enforces none and
// does not serve AlterClientQuotas. It needs DESCRIBE_CONFIGS on the
// cluster, and checks the filter as Kafka does, so a tool sees the same
// refusals; a valid filter matches no entity.
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
		return resp, nil
	}
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
