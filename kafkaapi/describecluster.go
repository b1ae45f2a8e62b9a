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

// Endpoint types of DescribeCluster v1 (KIP-919).
const (
	endpointBrokers     = 1
	endpointControllers = 2
)

// Operations a principal may be authorized for (ACL operation codes):
// every operation the resource type supports (AclEntry.supportedOperations),
// all of which Kafka reports without an authorizer.
var (
	clusterOperations = operationBits(kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe)
	topicOperations = operationBits(kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
)

func operationBits(ops ...kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << op
	}
	return bits
}

// startDescribeCluster answers from Backend.Cluster when its turn comes,
// as a Kafka broker does (KafkaApis.handleDescribeCluster): the live
// brokers, the cluster id and the controller, which is -1 unless it is
// among the brokers listed. Nodes are brokers only, so a request for the
// controller endpoints is refused.
func (s *Server) startDescribeCluster(req *kmsg.DescribeClusterRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
		switch req.EndpointType {
		case endpointBrokers:
		case endpointControllers:
			resp.ErrorCode = kerr.MismatchedEndpointType.Code
			resp.ErrorMessage = kmsg.StringPtr("the request was sent to an endpoint of type brokers, but wanted controllers")
			return resp, nil
		default:
			resp.ErrorCode = kerr.UnsupportedEndpointType.Code
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("unsupported endpoint type %d", req.EndpointType))
			return resp, nil
		}
		view := s.cluster(ctx)
		resp.ClusterID = view.ClusterID
		resp.EndpointType = endpointBrokers
		for _, b := range view.Brokers {
			rb := kmsg.NewDescribeClusterResponseBroker()
			rb.NodeID, rb.Host, rb.Port = b.NodeID, b.Host, b.Port
			if b.Rack != "" {
				rb.Rack = kmsg.StringPtr(b.Rack)
			}
			resp.Brokers = append(resp.Brokers, rb)
		}
		if slices.ContainsFunc(view.Brokers, func(b Broker) bool { return b.NodeID == view.ControllerID }) {
			resp.ControllerID = view.ControllerID
		}
		if req.IncludeClusterAuthorizedOperations {
			resp.ClusterAuthorizedOperations = s.authorizedOps(ctx, clusterOperations, acl.ResourceCluster, acl.ClusterName)
		}
		return resp, nil
	}
}
