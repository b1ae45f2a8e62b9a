package kafkaapi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// Groups is the Backend role that serves consumer groups: it finds
// a group's coordinator and hands out this node's coordinators. Errors are
// Kafka's: kerr.CoordinatorNotAvailable while a group's coordinator is not
// known (clients retry FindCoordinator), kerr.NotCoordinator when another
// node coordinates the group, kerr.CoordinatorLoadInProgress while this
// node is taking over.
type Groups interface {
	// CoordinatorNode returns the node that coordinates group now.
	CoordinatorNode(ctx context.Context, group string) (int32, error)

	// GroupCoordinator returns this node's coordinator of group.
	GroupCoordinator(ctx context.Context, group string) (GroupCoordinator, error)

	// GroupCoordinators returns every coordinator this node runs, for
	// ListGroups, and kerr.CoordinatorLoadInProgress with them while one
	// is still being loaded.
	GroupCoordinators() ([]GroupCoordinator, error)
}

// GroupCoordinator serves the groups of one coordinator (in the broker, one
// partition of __consumer_offsets). The request-shaped methods answer at
// the request's version and block as Kafka's coordinator does (JoinGroup
// until the rebalance completes, OffsetCommit until the commit is durable);
// ctx ends the wait when the connection closes.
type GroupCoordinator interface {
	JoinGroup(ctx context.Context, clientID, clientHost string, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse
	SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse
	Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse
	LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse
	OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse
	OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse

	// FetchOffsets answers one group of an OffsetFetch; topics nil means
	// every partition the group has committed.
	FetchOffsets(group string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) kmsg.OffsetFetchResponseGroup
	// DescribeGroup answers one group of a DescribeGroups as v6 does
	// (a group that is not classic, or unknown, is GROUP_ID_NOT_FOUND
	// with a message); the server fits it to older versions.
	DescribeGroup(group string) kmsg.DescribeGroupsResponseGroup
	// ListGroups lists the coordinator's groups, filtered by state and
	// type names when those are not empty.
	ListGroups(statesFilter, typesFilter []string) []kmsg.ListGroupsResponseGroup
	// DeleteGroup deletes an empty group and its offsets; nil on success.
	DeleteGroup(ctx context.Context, group string) *kerr.Error
	// ConsumerGroupHeartbeat answers a KIP-848 ConsumerGroupHeartbeat.
	// canDescribe tells the topics the client may DESCRIBE, to which
	// the member's regex subscription is limited.
	ConsumerGroupHeartbeat(ctx context.Context, clientID, clientHost string, canDescribe func(topic string) bool, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse
	// DescribeConsumerGroup answers one group of a ConsumerGroupDescribe.
	DescribeConsumerGroup(group string) kmsg.ConsumerGroupDescribeResponseGroup
	// ShareGroupHeartbeat answers a KIP-932 ShareGroupHeartbeat.
	ShareGroupHeartbeat(ctx context.Context, clientID, clientHost string, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse
	// DescribeShareGroup answers one group of a ShareGroupDescribe.
	DescribeShareGroup(group string) kmsg.ShareGroupDescribeResponseGroup
	// ValidateOffsetFetch checks the member and member epoch of an
	// OffsetFetch v9+ against a consumer group; nil for other groups.
	ValidateOffsetFetch(group string, memberID *string, memberEpoch int32) *kerr.Error
	// TxnOffsetCommit answers a TxnOffsetCommit: offsets pending until
	// the producer's transaction ends (its marker on the coordinator's
	// partition).
	TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse
}

// Coordinator key types of FindCoordinator v1+ (share: v6+).
const (
	coordinatorKeyGroup       = 0
	coordinatorKeyTransaction = 1
	coordinatorKeyShare       = 2
)

// ShareCoordinators is an optional capability of a Backend, found by type
// assertion: the share coordinator of a share partition's key,
// "group:topicId:partition" (FindCoordinator key type 2, which nodes use
// to find where a share partition's state lives).
type ShareCoordinators interface {
	ShareCoordinatorNode(ctx context.Context, key string) (int32, error)
}

// startFindCoordinator answers FindCoordinator 0-6 (v4 batches keys,
// KIP-699; v6 adds share keys, KIP-932) when its turn comes.
func (s *Server) startFindCoordinator(req *kmsg.FindCoordinatorRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		if req.Version < 4 {
			c := s.findCoordinator(ctx, req.CoordinatorKey, req.CoordinatorType, req.Version)
			resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
			resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
			return resp, nil
		}
		for _, key := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, s.findCoordinator(ctx, key, req.CoordinatorType, req.Version))
		}
		return resp, nil
	}
}

// findCoordinator finds one key's coordinator and its address.
func (s *Server) findCoordinator(ctx context.Context, key string, keyType int8, version int16) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(err error) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = ErrorCode(err), errorMessage(err)
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	var node int32
	var err error
	switch keyType {
	case coordinatorKeyGroup:
		if !s.authorizeGroup(ctx, acl.OpDescribe, key) {
			return fail(kerr.GroupAuthorizationFailed)
		}
		node, err = s.backend.CoordinatorNode(ctx, key)
	case coordinatorKeyTransaction:
		if !s.authorizeTxnID(ctx, acl.OpDescribe, key) {
			return fail(kerr.TransactionalIDAuthorizationFailed)
		}
		node, err = s.backend.TxnCoordinatorNode(ctx, key)
	case coordinatorKeyShare:
		node, err = s.shareCoordinatorNode(ctx, key, version)
	default:
		return fail(fmt.Errorf("%w: unknown coordinator key type %d", kerr.InvalidRequest, keyType))
	}
	if err != nil {
		return fail(err)
	}
	for _, b := range s.metadataView(ctx, false).Brokers {
		if b.NodeID == node {
			c.NodeID, c.Host, c.Port = b.NodeID, b.Host, b.Port
			return c
		}
	}
	return fail(fmt.Errorf("%w: coordinator %d is not alive", kerr.CoordinatorNotAvailable, node))
}

// shareCoordinatorNode finds a share key's coordinator as Kafka does:
// INVALID_REQUEST below v6, for a key not of the form
// "group:topicId:partition", or without the capability;
// CLUSTER_AUTHORIZATION_FAILED without CLUSTER_ACTION (only nodes ask).
func (s *Server) shareCoordinatorNode(ctx context.Context, key string, version int16) (int32, error) {
	sc, ok := s.backend.(ShareCoordinators)
	switch {
	case version < 6 || !ok:
		return -1, fmt.Errorf("%w: share coordinator keys need FindCoordinator v6 and share groups", kerr.InvalidRequest)
	case !s.authorizeCluster(ctx, acl.OpClusterAction):
		return -1, kerr.ClusterAuthorizationFailed
	case !validShareKey(key):
		return -1, fmt.Errorf("%w: share coordinator key %q is not group:topicId:partition", kerr.InvalidRequest, key)
	}
	return sc.ShareCoordinatorNode(ctx, key)
}

// validShareKey reports whether key is "group:topicId:partition" with a
// non-empty group (which may hold colons), a non-empty topic id and a
// partition number.
func validShareKey(key string) bool {
	parts := strings.Split(key, ":")
	n := len(parts)
	if n < 3 || parts[n-2] == "" || strings.TrimSpace(strings.Join(parts[:n-2], ":")) == "" {
		return false
	}
	_, err := strconv.ParseInt(parts[n-1], 10, 32)
	return err == nil
}

// coordinator returns this node's coordinator of group, bounding the
// lookup by the request timeout, once the client may do op on the group
// (else GROUP_AUTHORIZATION_FAILED).
func (s *Server) coordinator(ctx context.Context, group string, op acl.Operation) (GroupCoordinator, error) {
	if !s.authorizeGroup(ctx, op, group) {
		return nil, kerr.GroupAuthorizationFailed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	return s.backend.GroupCoordinator(ctx, group)
}
