package kafkaapi

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// startDescribeGroups answers DescribeGroups 0-6, each group by its
// coordinator.
func (s *Server) startDescribeGroups(req *kmsg.DescribeGroupsRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, id := range req.Groups {
			var g kmsg.DescribeGroupsResponseGroup
			if c, err := s.coordinator(ctx, id, acl.OpDescribe); err != nil {
				g = kmsg.NewDescribeGroupsResponseGroup()
				g.Group, g.ErrorCode = id, ErrorCode(err)
			} else {
				g = describedForVersion(c.DescribeGroup(id), req.Version)
			}
			g.AuthorizedOperations = noAuthorizedOperations
			if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
				g.AuthorizedOperations = s.authorizedOps(ctx, groupOperations, acl.ResourceGroup, id)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
}

// describedForVersion fits a coordinator's (v6) answer to the request's
// version. A group that is not a classic group, or is unknown, is Dead
// with GROUP_ID_NOT_FOUND and a message from v6 (KIP-1043); below v6
// Kafka 4.x answers the same Dead group without an error, since older
// clients read that as "no such group" (GroupMetadataManager.describeGroups).
func describedForVersion(g kmsg.DescribeGroupsResponseGroup, version int16) kmsg.DescribeGroupsResponseGroup {
	if version < 6 && g.ErrorCode == kerr.GroupIDNotFound.Code {
		g.ErrorCode, g.ErrorMessage = 0, nil
	}
	return g
}
