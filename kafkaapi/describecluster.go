package kafkaapi

import (
	"cmp"
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
// controller endpoints is refused. v2 with IncludeFencedBrokers (KIP-1073)
// adds the fenced brokers, IsFenced: the registered brokers gossip sees
// down (ClusterView.Down), which is what KRaft fences, a registered broker
// whose heartbeats stopped.
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
		view := onConnListener(ctx, s.clusterBrokers())
		resp.ClusterID = view.ClusterID
		resp.EndpointType = endpointBrokers
		for _, b := range view.Brokers {
			resp.Brokers = append(resp.Brokers, describedBroker(b, false))
		}
		if req.IncludeFencedBrokers {
			resp.Brokers = appendFenced(resp.Brokers, view.Down)
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

// describedBroker is b as DescribeCluster lists it.
func describedBroker(b Broker, fenced bool) kmsg.DescribeClusterResponseBroker {
	rb := kmsg.NewDescribeClusterResponseBroker()
	rb.NodeID, rb.Host, rb.Port, rb.IsFenced = b.NodeID, b.Host, b.Port, fenced
	if b.Rack != "" {
		rb.Rack = kmsg.StringPtr(b.Rack)
	}
	return rb
}

// appendFenced adds the down brokers with an endpoint on the connection's
// listener (as Kafka lists only brokers with one), then sorts the list by
// broker id, as Kafka's metadata image orders it.
func appendFenced(brokers []kmsg.DescribeClusterResponseBroker, down []DownBroker) []kmsg.DescribeClusterResponseBroker {
	added := false
	for _, d := range down {
		if d.Registered.Port == 0 && d.Registered.Host == "" {
			continue
		}
		brokers = append(brokers, describedBroker(d.Registered, true))
		added = true
	}
	if added {
		slices.SortStableFunc(brokers, func(a, b kmsg.DescribeClusterResponseBroker) int { return cmp.Compare(a.NodeID, b.NodeID) })
	}
	return brokers
}
